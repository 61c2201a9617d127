/**
 * HTTP client of the provider protocol (DESIGN §5; contract in @gatehouse/provider-sdk). It classifies
 * transport failures the way Core needs (core/ports.ts ProviderCallOutcome): a request that certainly
 * never left, or that the provider refused with a 4xx protocol error before running any handler (bad
 * request, refused grant), is `not_sent`; one that may have reached a handler — timeout, reset, 5xx,
 * an unparseable answer — is `lost`, whose outcome is unknown.
 * Invoke, status and target queries carry a grant (`Authorization: Bearer <JWT>`, grant-signer.ts); a
 * grant that cannot be signed means nothing was sent (`not_sent`; for a target query `unavailable`).
 */
import {
  ExecutionStatus,
  InvokeResponse,
  Manifest,
  ProtocolError,
  TargetVersion,
} from "@gatehouse/provider-sdk";
import type {
  ProviderCallOutcome,
  ProviderClient,
  ProviderRef,
  ProviderStatusOutcome,
  ProviderTargetOutcome,
} from "../core/ports.ts";
import type { GrantSigner } from "./grant-signer.ts";

/**
 * Finds a ready endpoint (`http://ip:port`) of a ProviderInstance for a call of session `sessionUid`
 * (a Sidecar provider lives in that session's agent pod), or undefined.
 */
export type EndpointLookup = (provider: ProviderRef, sessionUid: string) => string | undefined;

const MANIFEST_TIMEOUT_MS = 5_000;
/** Error codes meaning the TCP connection was never made, so nothing was sent. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code;
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

/** GET /v1/manifest, parsed with the contract. Throws on transport errors, non-2xx or a bad manifest. */
export async function fetchManifest(endpoint: string): Promise<Manifest> {
  const response = await fetch(`${endpoint}/v1/manifest`, {
    signal: AbortSignal.timeout(MANIFEST_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`GET /v1/manifest answered ${response.status}`);
  return Manifest.parse(await response.json());
}

/** The `not_sent` outcome of a grant that could not be signed (logged by Core with the execution). */
function unsignedGrant(provider: ProviderRef, error: unknown): { kind: "not_sent"; message: string } {
  const reason = error instanceof Error ? error.message : String(error);
  return {
    kind: "not_sent",
    message: `No grant could be signed for ProviderInstance ${provider.namespace}/${provider.name} (${reason}).`,
  };
}

/** The ProviderClient Core calls providers with; `grants` signs the grant of every invoke and status call. */
export function httpProviderClient(endpointOf: EndpointLookup, grants: GrantSigner): ProviderClient {
  return {
    async invoke(provider, request, { deadlineMs, sessionUid }): Promise<ProviderCallOutcome> {
      const endpoint = endpointOf(provider, sessionUid);
      if (!endpoint)
        return {
          kind: "not_sent",
          message: `ProviderInstance ${provider.namespace}/${provider.name} has no ready endpoint.`,
        };
      let signed: { body: string; grant: string };
      try {
        signed = await grants.signInvoke(provider, request, sessionUid);
      } catch (error) {
        return unsignedGrant(provider, error);
      }
      let response: Response;
      try {
        response = await fetch(`${endpoint}/v1/invoke`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "idempotency-key": request.idempotencyKey,
            authorization: `Bearer ${signed.grant}`,
          },
          body: signed.body,
          signal: AbortSignal.timeout(deadlineMs),
        });
      } catch (error) {
        if (isTimeout(error))
          return { kind: "lost", reason: "timeout", message: `No answer within ${deadlineMs} ms.` };
        const code = causeCode(error);
        if (code && NOT_SENT_CODES.has(code))
          return { kind: "not_sent", message: `Connection failed (${code}).` };
        return {
          kind: "lost",
          reason: "connection_lost",
          message: `Connection lost (${code ?? String(error)}).`,
        };
      }
      let body: unknown;
      try {
        body = await response.json();
      } catch (error) {
        if (isTimeout(error))
          return { kind: "lost", reason: "timeout", message: `No complete answer within ${deadlineMs} ms.` };
        return { kind: "lost", reason: "bad_response", message: `Answer ${response.status} is not JSON.` };
      }
      const refusal = ProtocolError.safeParse(body);
      if (response.status >= 400 && response.status < 500 && refusal.success) {
        // The SDK answers 4xx before any handler runs (bad request, refused grant, unknown route):
        // the call certainly did not execute, so it is a definite failure, not an unknown outcome.
        return {
          kind: "not_sent",
          message: `The provider refused the call before executing it (${response.status} ${refusal.data.kind}: ${refusal.data.message}).`,
        };
      }
      const parsed = InvokeResponse.safeParse(body);
      if (!response.ok || !parsed.success) {
        return {
          kind: "lost",
          reason: "bad_response",
          message: `Answer ${response.status} is not a provider receipt.`,
        };
      }
      return { kind: "answered", response: parsed.data };
    },
    async status(provider, idempotencyKey, { deadlineMs, sessionUid }): Promise<ProviderStatusOutcome> {
      const endpoint = endpointOf(provider, sessionUid);
      if (!endpoint)
        return {
          kind: "not_sent",
          message: `ProviderInstance ${provider.namespace}/${provider.name} has no ready endpoint.`,
        };
      let grant: string;
      try {
        grant = await grants.signStatus(provider, idempotencyKey, sessionUid);
      } catch (error) {
        return unsignedGrant(provider, error);
      }
      try {
        const response = await fetch(`${endpoint}/v1/executions/${encodeURIComponent(idempotencyKey)}`, {
          headers: { authorization: `Bearer ${grant}` },
          signal: AbortSignal.timeout(deadlineMs),
        });
        const parsed = ExecutionStatus.safeParse(await response.json());
        if (!parsed.success)
          return { kind: "lost", message: `Answer ${response.status} is not an execution status.` };
        return { kind: "answered", status: parsed.data };
      } catch (error) {
        const code = causeCode(error);
        if (code && NOT_SENT_CODES.has(code))
          return { kind: "not_sent", message: `Connection failed (${code}).` };
        return {
          kind: "lost",
          message: isTimeout(error) ? `No answer within ${deadlineMs} ms.` : String(error),
        };
      }
    },
    async target(provider, { kind, id }, { deadlineMs, sessionUid }): Promise<ProviderTargetOutcome> {
      const where = `ProviderInstance ${provider.namespace}/${provider.name}`;
      const endpoint = endpointOf(provider, sessionUid);
      if (!endpoint) return { kind: "unavailable", message: `${where} has no ready endpoint.` };
      let grant: string;
      try {
        grant = await grants.signTarget(provider, kind, id, sessionUid);
      } catch (error) {
        return { kind: "unavailable", message: unsignedGrant(provider, error).message };
      }
      try {
        const response = await fetch(
          `${endpoint}/v1/targets/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`,
          { headers: { authorization: `Bearer ${grant}` }, signal: AbortSignal.timeout(deadlineMs) },
        );
        const body: unknown = await response.json();
        if (response.status === 404) {
          const refusal = ProtocolError.safeParse(body);
          return {
            kind: "not_found",
            message: refusal.success ? refusal.data.message : `${where} knows no ${kind} ${id}.`,
          };
        }
        const parsed = TargetVersion.safeParse(body);
        if (!response.ok || !parsed.success)
          return { kind: "unavailable", message: `Answer ${response.status} is not a target version.` };
        return { kind: "answered", version: parsed.data.version };
      } catch (error) {
        return {
          kind: "unavailable",
          message: isTimeout(error) ? `No answer within ${deadlineMs} ms.` : `${where}: ${String(error)}`,
        };
      }
    },
  };
}
