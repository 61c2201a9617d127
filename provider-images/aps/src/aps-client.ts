/**
 * HTTP client of the APS business system (the fake in `test/fakes/src/aps` speaks the same API). Every
 * answer is parsed at this boundary; every failure becomes a `ProviderError` with a shared kind:
 *   400 → invalid_arguments · 401/403 → forbidden · 404 → not_found · 409/422 → conflict
 *   429/503 and connection failures → unavailable (nothing happened)
 *   other 5xx, lost responses, deadline → unknown_outcome / timeout for calls with an effect
 *   (a read has no effect, so there they are unavailable).
 * The two lookups that ask about something that may not exist — a plan's versions, the record of an
 * idempotency key — answer undefined for a 404 instead.
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

/** A plan's version numbers: the published one and the newest (a draft made since moves it). */
export const ApsPlanVersions = z.object({
  planId: z.string(),
  publishedVersion: z.number().int(),
  latestVersion: z.number().int(),
});
export type ApsPlanVersions = z.infer<typeof ApsPlanVersions>;

/** The APS's record of an operation made with an idempotency key, and the answer it got then. */
export const ApsOperationRecord = z.object({
  idempotencyKey: z.string(),
  operation: z.enum(["draft", "publish"]),
  planId: z.string(),
  user: z.string().nullable(),
  recordedAt: z.string(),
  statusCode: z.number().int(),
  body: z.unknown(),
});
export type ApsOperationRecord = z.infer<typeof ApsOperationRecord>;

const ApsErrorBody = z.object({ error: z.string().optional(), message: z.string().optional() }).loose();

/** Who acts in the APS, the idempotency key to pass on, and the caller's deadline. */
export interface ApsCallOptions {
  user: string;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** The APS operations the provider needs. */
export interface ApsClient {
  readPlan(planId: string, options: ApsCallOptions): Promise<ApsPlanVersion>;
  createDraft(planId: string, shiftDays: number, options: ApsCallOptions): Promise<ApsPlanVersion>;
  publish(planId: string, version: number, options: ApsCallOptions): Promise<ApsPublication>;
  /** The plan's version numbers; undefined when the plan does not exist. */
  planVersions(planId: string, options: ApsCallOptions): Promise<ApsPlanVersions | undefined>;
  /** The status query: what the APS recorded for `idempotencyKey`; undefined when it was never used. */
  operation(idempotencyKey: string, options: ApsCallOptions): Promise<ApsOperationRecord | undefined>;
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

/**
 * Maps a non-2xx APS answer to a kind, keeping the APS's own message for the human. `what` names the
 * operation (`"publish"`); `hasEffect` says whether it could have changed something.
 */
export function httpFailure(status: number, body: unknown, what: string, hasEffect: boolean): ProviderError {
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

/** One APS call: what it is (for messages), its route, whether it may change something. */
interface ApsRequest<T> {
  what: string;
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  hasEffect: boolean;
  schema: z.ZodType<T>;
}

/** A client of the APS at `baseUrl` (e.g. env `APS_URL`), using the global fetch. */
export function createApsClient(baseUrl: string): ApsClient {
  const root = baseUrl.replace(/\/+$/, "");

  /** Sends `request`; resolves to the parsed 2xx body, or undefined for a 404 when `missingIsUndefined`. */
  async function send<T>(
    request: ApsRequest<T>,
    options: ApsCallOptions,
    missingIsUndefined: boolean,
  ): Promise<T | undefined> {
    const { what, method, path, body, hasEffect, schema } = request;
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
    if (missingIsUndefined && response.status === 404) return undefined;
    if (!response.ok) throw httpFailure(response.status, payload, what, hasEffect);
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      // The effect happened (2xx) but we cannot read the receipt: say so rather than guess.
      throw new ProviderError(
        hasEffect ? "unknown_outcome" : "internal",
        `APS answered ${what} with an unexpected body`,
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }

  /** A call whose every non-2xx answer is a failure. */
  const call = async <T>(request: ApsRequest<T>, options: ApsCallOptions): Promise<T> =>
    (await send(request, options, false)) as T;
  /** A lookup: a 404 means "there is none", not a failure. */
  const lookup = <T>(request: ApsRequest<T>, options: ApsCallOptions): Promise<T | undefined> =>
    send(request, options, true);

  const plan = (planId: string) => `/api/plans/${encodeURIComponent(planId)}`;
  return {
    readPlan: (planId, options) =>
      call(
        { what: "read plan", method: "GET", path: plan(planId), hasEffect: false, schema: ApsPlanVersion },
        options,
      ),
    createDraft: (planId, shiftDays, options) =>
      call(
        {
          what: "create draft",
          method: "POST",
          path: `${plan(planId)}/drafts`,
          body: { shiftDays },
          hasEffect: true,
          schema: ApsPlanVersion,
        },
        options,
      ),
    publish: (planId, version, options) =>
      call(
        {
          what: "publish",
          method: "POST",
          path: `${plan(planId)}/publish`,
          body: { version },
          hasEffect: true,
          schema: ApsPublication,
        },
        options,
      ),
    planVersions: (planId, options) =>
      lookup(
        {
          what: "read plan versions",
          method: "GET",
          path: `${plan(planId)}/versions`,
          hasEffect: false,
          schema: ApsPlanVersions,
        },
        options,
      ),
    operation: (idempotencyKey, options) =>
      lookup(
        {
          what: "read operation record",
          method: "GET",
          path: `/api/operations/${encodeURIComponent(idempotencyKey)}`,
          hasEffect: false,
          schema: ApsOperationRecord,
        },
        options,
      ),
  };
}
