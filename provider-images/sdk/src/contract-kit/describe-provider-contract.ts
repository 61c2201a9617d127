/**
 * The provider contract-test kit (DESIGN §1 "provider author … runs its contract-test kit"). A provider's
 * test file calls `describeProviderContract(...)`; the kit registers vitest tests that talk to the
 * *running* provider over real HTTP and check what Core relies on (DESIGN §4, §5):
 *   - the manifest parses, ids are unique and match the id pattern, schemas compile strictly, the input
 *     is an object at the top and every array declares `items`; every capability has an example;
 *   - health answers with the contract's shape;
 *   - each example invoke succeeds and its result matches the capability's output schema;
 *   - a capability with `idempotency: key` gives the same receipt for a repeated key;
 *   - the execution status of a used key returns that receipt; an unused key is `not_found`;
 *   - an unoffered capability is a `failed/not_found` receipt; a body that is not JSON or not an
 *     InvokeRequest is a 400 `invalid_request`; an unknown route is a 404 `not_found`;
 *   - with `grant` given: invoke and status without a grant are 401 `unauthenticated`.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ExecutionStatus,
  Health,
  type InvokeRequest,
  Manifest,
  ProtocolError,
  Receipt,
  type Subject,
} from "../contract.ts";
import type { GrantedCall } from "../grant.ts";
import { strictSchemaCompiler } from "../schema-compiler.ts";
import { capabilityIdProblems, exampleCoverageProblems, manifestSchemaProblems } from "./manifest-checks.ts";
import { type Answer, getExecution, getJson, postInvoke, postInvokeText } from "./provider-calls.ts";

/** A provider the kit talks to: its base URL (no trailing slash) and how to stop it. */
export interface RunningProvider {
  url: string;
  stop(): Promise<void>;
}

/**
 * Valid arguments for one capability, which must succeed. A function is called once per test that
 * invokes, right before the invoke, to prepare business state (e.g. create the draft a publish needs).
 */
export interface ContractExample {
  arguments: Record<string, unknown> | (() => Promise<Record<string, unknown>>);
  /** Who the call is for (default `{user: "alice", groups: []}`); `account` is the bound business account. */
  subject?: Subject;
  account?: string;
}

/** Options of `describeProviderContract`. */
export interface ProviderContractOptions {
  /** Shown in the describe block, e.g. `"erp"`. */
  name: string;
  /** Starts the provider (and whatever it calls) once for the whole block. */
  start(): Promise<RunningProvider>;
  /** One example per offered capability id, no more, no less. */
  examples: Record<string, ContractExample>;
  /** The bearer grant for a call, when the provider verifies grants (`serveProvider({verifyGrant})`). */
  grant?: (call: GrantedCall) => Promise<string>;
}

const defaultSubject: Subject = { user: "alice", groups: [] };

/** Registers the contract tests of one provider (see the file comment). Call it at a test file's top level. */
export function describeProviderContract(options: ProviderContractOptions): void {
  describe(`provider contract: ${options.name}`, () => {
    let provider: RunningProvider;
    let manifest: Manifest;
    const run = randomUUID().slice(0, 8);
    let counter = 0;

    beforeAll(async () => {
      provider = await options.start();
      const answer = await getJson(provider.url, "/v1/manifest");
      manifest = Manifest.parse(answer.body);
    });
    afterAll(async () => {
      await provider?.stop();
    });

    const offerOf = (id: string) => manifest.capabilities.find((offer) => offer.id === id);

    async function requestFor(id: string, key?: string): Promise<InvokeRequest> {
      const example = options.examples[id]!;
      counter += 1;
      const args = typeof example.arguments === "function" ? await example.arguments() : example.arguments;
      const request: InvokeRequest = {
        executionId: `contract-${run}-exec-${counter}`,
        idempotencyKey: key ?? `contract-${run}-key-${counter}`,
        capability: id,
        arguments: args,
        subject: example.subject ?? defaultSubject,
      };
      if (example.account !== undefined) request.account = example.account;
      return request;
    }

    async function invoke(request: InvokeRequest): Promise<Answer> {
      const grant = options.grant
        ? await options.grant({ route: "invoke", body: request, request })
        : undefined;
      return postInvoke(provider.url, request, grant);
    }

    async function status(idempotencyKey: string): Promise<Answer> {
      const grant = options.grant ? await options.grant({ route: "status", idempotencyKey }) : undefined;
      return getExecution(provider.url, idempotencyKey, grant);
    }

    /** The receipt of a 200 answer; fails the test with the whole answer otherwise. */
    function receiptOf(answer: Answer): Receipt {
      expect(answer.status, `invoke answered ${answer.status}: ${JSON.stringify(answer.body)}`).toBe(200);
      return Receipt.parse(answer.body);
    }

    /** The ProtocolError of a non-2xx answer with the expected status. */
    function protocolErrorOf(answer: Answer, expectedStatus: number): ProtocolError {
      expect(answer.status, JSON.stringify(answer.body)).toBe(expectedStatus);
      const parsed = ProtocolError.safeParse(answer.body);
      expect(parsed.success, `not a ProtocolError: ${JSON.stringify(answer.body)}`).toBe(true);
      return parsed.data!;
    }

    it("serves a manifest whose capability ids are unique and match the id pattern", () => {
      expect(capabilityIdProblems(manifest)).toEqual([]);
    });

    it("declares schemas that compile strictly, with an object input and items on every array", () => {
      expect(manifestSchemaProblems(manifest)).toEqual([]);
    });

    it("has an example for every offered capability", () => {
      expect(exampleCoverageProblems(manifest, Object.keys(options.examples))).toEqual([]);
    });

    it("answers health with a status of the contract", async () => {
      const answer = await getJson(provider.url, "/v1/health");
      expect(answer.status).toBe(200);
      expect(Health.safeParse(answer.body).success, JSON.stringify(answer.body)).toBe(true);
    });

    for (const id of Object.keys(options.examples)) {
      it(`invokes ${id} with its example and the result matches its output schema`, async () => {
        const offer = offerOf(id);
        expect(offer, `${id} is not offered`).toBeDefined();
        const receipt = receiptOf(await invoke(await requestFor(id)));
        expect(receipt, JSON.stringify(receipt)).toMatchObject({ status: "succeeded" });
        const validate = strictSchemaCompiler().compile(offer!.outputSchema);
        expect(validate(receipt.result), JSON.stringify(validate.errors)).toBe(true);
      });

      it(`answers the execution status of a key used for ${id} with its receipt`, async () => {
        const request = await requestFor(id);
        const receipt = receiptOf(await invoke(request));
        const answer = await status(request.idempotencyKey);
        expect(answer.status).toBe(200);
        const known = ExecutionStatus.parse(answer.body);
        expect(known).toEqual({
          idempotencyKey: request.idempotencyKey,
          status: receipt.status,
          response: receipt,
        });
      });

      it(`returns the same receipt when ${id} is invoked twice with one key, if its idempotency is key`, async (context) => {
        const idempotency = offerOf(id)?.idempotency;
        if (idempotency !== "key") {
          context.skip(`not applicable: ${id} declares idempotency ${idempotency}, this check is for "key"`);
        }
        const request = await requestFor(id);
        const first = receiptOf(await invoke(request));
        const second = receiptOf(await invoke(request));
        expect(second).toEqual(first);
      });
    }

    /** A well-formed request that needs no business state (its arguments are `{}`), and its grant. */
    async function plainRequest(capability: string): Promise<{ request: InvokeRequest; grant?: string }> {
      counter += 1;
      const request: InvokeRequest = {
        executionId: `contract-${run}-exec-${counter}`,
        idempotencyKey: `contract-${run}-key-${counter}`,
        capability,
        arguments: {},
        subject: defaultSubject,
      };
      if (!options.grant) return { request };
      return { request, grant: await options.grant({ route: "invoke", body: request, request }) };
    }

    it("answers an unoffered capability with a failed not_found receipt", async () => {
      const { request, grant } = await plainRequest("contract-kit.never.offered");
      const receipt = receiptOf(await postInvoke(provider.url, request, grant));
      expect(receipt).toMatchObject({ status: "failed", errorKind: "not_found" });
      expect(receipt.message).toContain("contract-kit.never.offered");
    });

    it("refuses a body that is not JSON with 400 invalid_request", async () => {
      const { request, grant } = await plainRequest(Object.keys(options.examples)[0]!);
      const truncated = JSON.stringify(request).slice(0, 20);
      const error = protocolErrorOf(await postInvokeText(provider.url, truncated, grant), 400);
      expect(error.kind).toBe("invalid_request");
    });

    it("refuses a JSON body that is not an InvokeRequest with 400 invalid_request naming the fields", async () => {
      const { request, grant } = await plainRequest(Object.keys(options.examples)[0]!);
      const { idempotencyKey: _dropped, ...withoutKey } = request;
      const body = JSON.stringify({ ...withoutKey, subject: { groups: [] } });
      const error = protocolErrorOf(await postInvokeText(provider.url, body, grant), 400);
      expect(error.kind).toBe("invalid_request");
      expect(error.issues?.map((issue) => issue.path)).toEqual(
        expect.arrayContaining(["idempotencyKey", "subject.user"]),
      );
    });

    it("answers not_found for the execution status of a key never used", async () => {
      const key = `contract-${run}-never-used`;
      const answer = await status(key);
      expect(answer.status).toBe(200);
      expect(ExecutionStatus.parse(answer.body)).toEqual({ idempotencyKey: key, status: "not_found" });
    });

    it("answers an unknown route with 404 not_found", async () => {
      const error = protocolErrorOf(await getJson(provider.url, "/v1/no-such-route"), 404);
      expect(error.kind).toBe("not_found");
    });

    it("refuses invoke and status without a grant with 401 unauthenticated, if it verifies grants", async (context) => {
      if (!options.grant) context.skip("not applicable: this provider runs without a grant verifier");
      const { request } = await plainRequest(Object.keys(options.examples)[0]!);
      expect(protocolErrorOf(await postInvoke(provider.url, request), 401).kind).toBe("unauthenticated");
      expect(protocolErrorOf(await getExecution(provider.url, request.idempotencyKey), 401).kind).toBe(
        "unauthenticated",
      );
    });
  });
}
