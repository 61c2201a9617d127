/**
 * HTTP client of the APS business system (the fake in `test/fakes/src/aps` speaks the same API). Every
 * answer is parsed at this boundary; every failure becomes a `ProviderError` with a shared kind:
 *   400 → invalid_arguments · 401/403 → forbidden · 404 → not_found · 409/422 → conflict
 *   429/503 and connection failures → unavailable (nothing happened)
 *   other 5xx, lost responses, deadline → unknown_outcome / timeout for calls with an effect
 *   (a read has no effect, so there they are unavailable).
 */
import { ProviderError } from "@gatehouse/provider-sdk";
import { z } from "zod";

/** A plan version as the APS returns it. */
export const ApsPlanVersion = z.object({
  id: z.string(),
  week: z.string(),
  version: z.number().int(),
  status: z.enum(["published", "draft", "superseded"]),
  basedOnVersion: z.number().int().nullable(),
  lines: z.array(
    z.object({
      lineId: z.string(),
      resource: z.string(),
      product: z.string(),
      quantity: z.number(),
      start: z.string(),
      end: z.string(),
    }),
  ),
});
export type ApsPlanVersion = z.infer<typeof ApsPlanVersion>;

/** The APS's answer to a publish. */
export const ApsPublication = z.object({
  planId: z.string(),
  version: z.number().int(),
  status: z.literal("published"),
  publicationId: z.string(),
  publishedBy: z.string(),
  publishedAt: z.string(),
});
export type ApsPublication = z.infer<typeof ApsPublication>;

const ApsErrorBody = z.object({ error: z.string().optional(), message: z.string().optional() }).loose();

/** Who acts in the APS, the idempotency key to pass on, and the caller's deadline. */
export interface ApsCallOptions {
  user: string;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** The three APS operations the provider needs. */
export interface ApsClient {
  readPlan(planId: string, options: ApsCallOptions): Promise<ApsPlanVersion>;
  createDraft(planId: string, shiftDays: number, options: ApsCallOptions): Promise<ApsPlanVersion>;
  publish(planId: string, version: number, options: ApsCallOptions): Promise<ApsPublication>;
}

const connectFailures = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

/** Maps a failed fetch (no HTTP answer) to a kind; `hasEffect` says whether the call may have changed something. */
function networkFailure(
  error: unknown,
  what: string,
  hasEffect: boolean,
  signal?: AbortSignal,
): ProviderError {
  const code = causeCode(error);
  if (code && connectFailures.has(code)) {
    return new ProviderError("unavailable", `APS unreachable during ${what} (${code})`, { cause: error });
  }
  if (signal?.aborted) {
    return new ProviderError(hasEffect ? "timeout" : "unavailable", `APS did not answer ${what} in time`, {
      cause: error,
    });
  }
  return new ProviderError(
    hasEffect ? "unknown_outcome" : "unavailable",
    `APS connection failed during ${what} (${code ?? "no code"})`,
    { cause: error },
  );
}

/** Maps a non-2xx APS answer to a kind, keeping the APS's own message for the human. */
function httpFailure(status: number, body: unknown, what: string, hasEffect: boolean): ProviderError {
  const parsed = ApsErrorBody.safeParse(body);
  const detail = parsed.success ? (parsed.data.message ?? parsed.data.error ?? "") : "";
  const message = `APS refused ${what} with HTTP ${status}${detail ? `: ${detail}` : ""}`;
  if (status === 400) return new ProviderError("invalid_arguments", message);
  if (status === 401 || status === 403) return new ProviderError("forbidden", message);
  if (status === 404) return new ProviderError("not_found", message);
  if (status === 409 || status === 422) return new ProviderError("conflict", message);
  if (status === 429 || status === 503 || !hasEffect) return new ProviderError("unavailable", message);
  return new ProviderError("unknown_outcome", message);
}

/** A client of the APS at `baseUrl` (e.g. env `APS_URL`), using the global fetch. */
export function createApsClient(baseUrl: string): ApsClient {
  const root = baseUrl.replace(/\/+$/, "");

  async function call<T>(
    what: string,
    method: "GET" | "POST",
    path: string,
    body: unknown,
    hasEffect: boolean,
    schema: z.ZodType<T>,
    options: ApsCallOptions,
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json", "x-aps-user": options.user };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
    let response: Response;
    let payload: unknown;
    try {
      response = await fetch(`${root}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      payload = await response.json().catch(() => undefined);
    } catch (error) {
      throw networkFailure(error, what, hasEffect, options.signal);
    }
    if (!response.ok) throw httpFailure(response.status, payload, what, hasEffect);
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      // The effect happened (2xx) but we cannot read the receipt: say so rather than guess.
      throw new ProviderError(
        hasEffect ? "unknown_outcome" : "internal",
        `APS answered ${what} with an unexpected body`,
        {
          cause: parsed.error,
        },
      );
    }
    return parsed.data;
  }

  const plan = (planId: string) => `/api/plans/${encodeURIComponent(planId)}`;
  return {
    readPlan: (planId, options) =>
      call("read plan", "GET", plan(planId), undefined, false, ApsPlanVersion, options),
    createDraft: (planId, shiftDays, options) =>
      call("create draft", "POST", `${plan(planId)}/drafts`, { shiftDays }, true, ApsPlanVersion, options),
    publish: (planId, version, options) =>
      call("publish", "POST", `${plan(planId)}/publish`, { version }, true, ApsPublication, options),
  };
}
