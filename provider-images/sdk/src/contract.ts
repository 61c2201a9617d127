/**
 * The Core ↔ provider wire contract (DESIGN §5), defined once: Core calls with these types and
 * providers serve them. Endpoints, all JSON over HTTP:
 *   GET  /v1/manifest                      → Manifest
 *   GET  /v1/health                        → Health
 *   POST /v1/invoke                        InvokeRequest → InvokeResponse
 *   GET  /v1/executions/{idempotencyKey}   → ExecutionStatus
 * Invoke and status carry the grant (DESIGN §5) as `Authorization: Bearer <JWT>`; a provider refuses a
 * missing or invalid one with a `ProtocolError` (401/403). The server helper calls the provider's grant
 * verifier (`grant.ts`); the EdDSA/JWKS verifier is `jwks-verifier.ts`, the claims `grant-claims.ts`.
 * Business outcomes are always HTTP 200 with a `Receipt`; any other status is a `ProtocolError` about the
 * HTTP exchange itself (bad request, no grant, unknown route, provider bug).
 */
import { z } from "zod";

/** What a capability does to the business system: read nothing changes, draft an isolated copy, write the real thing. */
export const Effect = z.enum(["read", "draft", "write"]);
export type Effect = z.infer<typeof Effect>;

/** Whether an invoke answers with the outcome (sync) or an accepted execution to poll (async). */
export const Mode = z.enum(["sync", "async"]);
export type Mode = z.infer<typeof Mode>;

/** How the provider deduplicates a repeated invoke: by our idempotency key, by the business data itself, or not at all. */
export const Idempotency = z.enum(["none", "key", "natural"]);
export type Idempotency = z.infer<typeof Idempotency>;

/**
 * The shared error kinds: every error carries one. `forbidden` from a provider is the business
 * system's final word: Core never rewrites or retries it. `unknown_outcome` means nobody knows whether
 * the effect happened.
 */
export const ErrorKind = z.enum([
  "invalid_arguments",
  "forbidden",
  "not_found",
  "conflict",
  "unavailable",
  "timeout",
  "unknown_outcome",
  "internal",
]);
export type ErrorKind = z.infer<typeof ErrorKind>;

/** The RE2-safe pattern of a capability id: two or more dot-separated lowercase segments (DESIGN §2). */
export const CAPABILITY_ID_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)+$/;
/** Capability id: dotted lowercase segments, at most 64 characters (DESIGN §2). */
export const CapabilityId = z.string().max(64).regex(CAPABILITY_ID_PATTERN);

/** A JSON Schema (draft 2020-12 subset that ajv accepts) kept as a plain object. */
export const JsonSchemaObject = z.record(z.string(), z.unknown());

/** A business-object kind as a target route names it: lowercase, like a Kubernetes resource name. */
export const TargetKind = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);

/**
 * The business object a write changes, read from its arguments: `idArgument` and `versionArgument` name
 * top-level properties of the input schema (both required there). Core copies the target into the
 * Approval (`spec.target`) and, before dispatching an approved call, asks `GET /v1/targets/{kind}/{id}`
 * for the current version: a version that moved since the proposal makes the Approval `Stale`
 * (DESIGN §2 Approval, "target version unchanged").
 */
export const TargetOffer = z.object({
  kind: TargetKind,
  idArgument: z.string().min(1).max(63),
  versionArgument: z.string().min(1).max(63),
});
export type TargetOffer = z.infer<typeof TargetOffer>;

/** One capability a provider offers. */
export const CapabilityOffer = z.object({
  id: CapabilityId,
  description: z.string().max(1024),
  effect: Effect,
  mode: Mode,
  idempotency: Idempotency,
  inputSchema: JsonSchemaObject,
  outputSchema: JsonSchemaObject,
  /** The business object a write changes (see {@link TargetOffer}); absent when there is none. */
  target: TargetOffer.optional(),
});
export type CapabilityOffer = z.infer<typeof CapabilityOffer>;

/** `GET /v1/manifest`. */
export const Manifest = z.object({
  provider: z.string().min(1).max(63),
  version: z.string().min(1).max(64),
  requiresIdentity: z.boolean(),
  capabilities: z.array(CapabilityOffer).max(256),
});
export type Manifest = z.infer<typeof Manifest>;

/** `GET /v1/health`. */
export const Health = z.object({
  status: z.enum(["ok", "degraded", "down"]),
  message: z.string().optional(),
});
export type Health = z.infer<typeof Health>;

/** Who the call is made for: the session's subject, and the business account it maps to when the provider requires identity. */
export const Subject = z.object({ user: z.string().min(1), groups: z.array(z.string()) });
export type Subject = z.infer<typeof Subject>;

/** `POST /v1/invoke` body. `arguments` are the validated arguments Core stored with the execution. */
export const InvokeRequest = z.object({
  executionId: z.string().min(1),
  idempotencyKey: z.string().min(1).max(128),
  capability: CapabilityId,
  arguments: z.record(z.string(), z.unknown()),
  subject: Subject,
  account: z.string().optional(),
});
export type InvokeRequest = z.infer<typeof InvokeRequest>;

/** A pointer to evidence the business system keeps (a document number, an audit id). */
export const Evidence = z.object({ system: z.string(), reference: z.string() });
export type Evidence = z.infer<typeof Evidence>;

/**
 * `POST /v1/invoke` answer: the receipt. HTTP 200 for both outcomes; non-2xx means the provider itself
 * failed (a `ProtocolError`). A `failed` receipt names its `errorKind`; a `succeeded` one has none.
 */
export const Receipt = z
  .object({
    status: z.enum(["succeeded", "failed"]),
    result: z.unknown().optional(),
    errorKind: ErrorKind.optional(),
    message: z.string().optional(),
    evidence: Evidence.optional(),
  })
  .refine((receipt) => (receipt.status === "failed") === (receipt.errorKind !== undefined), {
    message: "a failed receipt needs an errorKind and a succeeded one must not have one",
    path: ["errorKind"],
  });
export type Receipt = z.infer<typeof Receipt>;

/** The same schema under the name of the route it answers (`POST /v1/invoke`). */
export const InvokeResponse = Receipt;
export type InvokeResponse = Receipt;

/**
 * `GET /v1/targets/{kind}/{id}`: the current version of a business object, as its system reports it
 * now. A missing object is a 404 `ProtocolError` (`not_found`).
 */
export const TargetVersion = z.object({
  kind: TargetKind,
  id: z.string().min(1).max(253),
  version: z.string().min(1).max(63),
});
export type TargetVersion = z.infer<typeof TargetVersion>;

/** `GET /v1/executions/{idempotencyKey}`: what the provider knows of an earlier invoke with that key. */
export const ExecutionStatus = z.object({
  idempotencyKey: z.string(),
  status: z.enum(["succeeded", "failed", "in_progress", "not_found"]),
  response: InvokeResponse.optional(),
});
export type ExecutionStatus = z.infer<typeof ExecutionStatus>;

/**
 * Kinds of a refused or failed HTTP exchange (never a business outcome, which is a `Receipt`):
 *   invalid_request  400 — the body is not JSON or not an InvokeRequest (a caller bug, not the model's arguments)
 *   unauthenticated  401 — no grant (`Authorization: Bearer <grant>` missing or not a bearer token)
 *   forbidden        403 — the grant was refused (signature, audience, expiry, body digest, reused jti)
 *   not_found        404 — no such route
 *   internal         500 — the provider failed; its log says why
 */
export const ProtocolErrorKind = z.enum([
  "invalid_request",
  "unauthenticated",
  "forbidden",
  "not_found",
  "internal",
]);
export type ProtocolErrorKind = z.infer<typeof ProtocolErrorKind>;

/** One problem of a refused request: where (`path`, e.g. `"idempotencyKey"` or `"(body)"`) and what. */
export const ProtocolIssue = z.object({ path: z.string(), message: z.string() });
export type ProtocolIssue = z.infer<typeof ProtocolIssue>;

/** The body of every non-2xx answer of a provider. `message` says what to fix. */
export const ProtocolError = z.object({
  kind: ProtocolErrorKind,
  message: z.string().min(1),
  issues: z.array(ProtocolIssue).optional(),
});
export type ProtocolError = z.infer<typeof ProtocolError>;

/** The HTTP status that goes with each protocol error kind. */
export const protocolErrorStatus: Readonly<Record<ProtocolErrorKind, number>> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  internal: 500,
};
