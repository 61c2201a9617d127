/**
 * One run of the contract kit against one provider: the options a provider's test gives, the running
 * provider and its manifest, the kit's grant issuer, and the calls the checks make (each with a valid
 * grant unless a check asks for none or a forged one). Checks (`contract-checks.ts`) only read this.
 */
import { randomUUID } from "node:crypto";
import type { CapabilityOffer, InvokeRequest, Manifest, Subject } from "../contract.ts";
import { Manifest as ManifestSchema } from "../contract.ts";
import {
  type ContractGrants,
  type GrantForgery,
  type KitGrantIssuer,
  startKitGrantIssuer,
} from "./kit-grants.ts";
import { type Answer, getExecution, getJson, postInvokeText } from "./provider-calls.ts";

/** A provider the kit talks to: its base URL (no trailing slash) and how to stop it. */
export interface RunningProvider {
  url: string;
  stop(): Promise<void>;
}

/**
 * Valid arguments for one capability, which must succeed. A function is called once per check that
 * invokes, right before the invoke, to prepare business state (e.g. create the draft a publish needs).
 * For a capability with a `target`, the arguments name the object's current version (else Core would
 * find the call Stale).
 */
export interface ContractExample {
  arguments: Record<string, unknown> | (() => Promise<Record<string, unknown>>);
  /** Who the call is for (default `{user: "alice", groups: []}`). */
  subject?: Subject;
  /** The bound business account; needed when the manifest says `requiresIdentity`. */
  account?: string;
}

/** Options of `describeProviderContract` and `runProviderContract`. */
export interface ProviderContractOptions {
  /** Shown in the describe block, e.g. `"erp"`. */
  name: string;
  /**
   * Starts the provider (and whatever it calls) once for the whole run. It must verify grants against
   * `grants` as its main would against the operator: `verifyGrant: grantVerifierFromEnvironment(grants.environment)`.
   */
  start(grants: ContractGrants): Promise<RunningProvider>;
  /** One example per offered capability id, no more, no less. */
  examples: Record<string, ContractExample>;
}

/** What `grant` means in a session call: a valid grant (default), none at all, or a forged one. */
export type GrantChoice = "valid" | "none" | GrantForgery | { grant: string };

const defaultSubject: Subject = { user: "alice", groups: [] };

/** A started run; see the file comment. */
export interface ContractSession {
  options: ProviderContractOptions;
  provider: RunningProvider;
  manifest: Manifest;
  grants: KitGrantIssuer;
  /** A unique string of this run, for keys and ids no other run uses. */
  run: string;
  offerOf(id: string): CapabilityOffer | undefined;
  /** The example request of `id` with fresh ids; `account: null` drops the example's account. */
  requestFor(id: string, overrides?: { key?: string; account?: string | null }): Promise<InvokeRequest>;
  /** A well-formed request that needs no business state (arguments `{}`). */
  plainRequest(capability: string): InvokeRequest;
  /** The grant a call would carry for `choice`, or undefined for none. */
  grantFor(call: Parameters<KitGrantIssuer["issue"]>[0], choice?: GrantChoice): Promise<string | undefined>;
  /** `POST /v1/invoke` with `body` (an InvokeRequest or any JSON); the grant is for `signedFor` (default the body). */
  invoke(body: InvokeRequest, options?: { grant?: GrantChoice; signedFor?: InvokeRequest }): Promise<Answer>;
  /** `POST /v1/invoke` with a raw text body and a grant for `signedFor`. */
  invokeText(text: string, signedFor: InvokeRequest): Promise<Answer>;
  status(idempotencyKey: string, grant?: GrantChoice): Promise<Answer>;
  target(kind: string, id: string, grant?: GrantChoice): Promise<Answer>;
  getJson(path: string): Promise<Answer>;
  close(): Promise<void>;
}

/** Starts the grant issuer and the provider, and reads the manifest. Stops both when a step fails. */
export async function openContractSession(options: ProviderContractOptions): Promise<ContractSession> {
  const grants = await startKitGrantIssuer();
  let provider: RunningProvider | undefined;
  try {
    provider = await options.start(grants);
    const manifest = ManifestSchema.parse((await getJson(provider.url, "/v1/manifest")).body);
    return sessionOf(options, provider, manifest, grants);
  } catch (error) {
    await provider?.stop();
    await grants.close();
    throw error;
  }
}

function sessionOf(
  options: ProviderContractOptions,
  provider: RunningProvider,
  manifest: Manifest,
  grants: KitGrantIssuer,
): ContractSession {
  const run = randomUUID().slice(0, 8);
  let counter = 0;
  const next = () => {
    counter += 1;
    return counter;
  };

  async function grantFor(
    call: Parameters<KitGrantIssuer["issue"]>[0],
    choice: GrantChoice = "valid",
  ): Promise<string | undefined> {
    if (choice === "none") return undefined;
    if (choice === "valid") return grants.issue(call);
    if ("grant" in choice) return choice.grant;
    return grants.issue(call, choice);
  }

  const session: ContractSession = {
    options,
    provider,
    manifest,
    grants,
    run,
    offerOf: (id) => manifest.capabilities.find((offer) => offer.id === id),
    async requestFor(id, overrides = {}) {
      const example = options.examples[id]!;
      const n = next();
      const args = typeof example.arguments === "function" ? await example.arguments() : example.arguments;
      const request: InvokeRequest = {
        executionId: `contract-${run}-exec-${n}`,
        idempotencyKey: overrides.key ?? `contract-${run}-key-${n}`,
        capability: id,
        arguments: args,
        subject: example.subject ?? defaultSubject,
      };
      const account = overrides.account === undefined ? example.account : overrides.account;
      if (account !== undefined && account !== null) request.account = account;
      return request;
    },
    plainRequest(capability) {
      const n = next();
      return {
        executionId: `contract-${run}-exec-${n}`,
        idempotencyKey: `contract-${run}-key-${n}`,
        capability,
        arguments: {},
        subject: defaultSubject,
      };
    },
    grantFor,
    async invoke(body, { grant, signedFor } = {}) {
      const signed = signedFor ?? body;
      const bearer = await grantFor({ route: "invoke", body: signed, request: signed }, grant);
      return postInvokeText(provider.url, JSON.stringify(body), bearer);
    },
    async invokeText(text, signedFor) {
      const bearer = await grantFor({ route: "invoke", body: signedFor, request: signedFor });
      return postInvokeText(provider.url, text, bearer);
    },
    async status(idempotencyKey, grant) {
      return getExecution(
        provider.url,
        idempotencyKey,
        await grantFor({ route: "status", idempotencyKey }, grant),
      );
    },
    async target(kind, id, grant) {
      const bearer = await grantFor({ route: "target", kind, id }, grant);
      return getJson(
        provider.url,
        `/v1/targets/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`,
        bearer,
      );
    },
    getJson: (path) => getJson(provider.url, path),
    async close() {
      await provider.stop();
      await grants.close();
    },
  };
  return session;
}
