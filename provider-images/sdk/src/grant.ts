/**
 * The grant hook of the provider server (DESIGN §5). Invoke and status carry a grant — a JWT signed by
 * the operator — as `Authorization: Bearer <grant>`. `serveProvider` takes the bearer token from the
 * header and, before any handler runs or any remembered receipt is replayed, awaits the provider's
 * `GrantVerifier`; a missing token is 401 `unauthenticated`, a verifier that throws is 401/403.
 *
 * The production verifier (`jwks-verifier.ts`) checks, per DESIGN §5: the EdDSA signature against the
 * operator's JWKS (`kid` rotation), `aud` = this ProviderInstance (ns/name), `exp` ≤ 60 s ahead, `cap`
 * and `idempotencyKey` equal to the request's, `argsDigest` = RFC 8785 digest of the body as received,
 * and a `jti` not seen before. This file only defines the seam and the header parsing.
 */
import type { InvokeRequest, ProtocolErrorKind } from "./contract.ts";

/** What a grant is checked against: the invoke body (as received and as parsed) or the status key. */
export type GrantedCall =
  | {
      route: "invoke";
      /** The JSON body exactly as parsed from the wire, unknown keys included (the digest covers it). */
      body: unknown;
      request: InvokeRequest;
    }
  | { route: "status"; idempotencyKey: string }
  /** `GET /v1/targets/{kind}/{id}`: its grant carries the claim `target: "<kind>/<id>"` instead of a body digest. */
  | { route: "target"; kind: string; id: string };

/**
 * Checks one grant for one call. Resolves to accept; throws `GrantRefusal` to refuse with a kind and a
 * message. Any other thrown value also refuses (403 `forbidden`, fail closed) and is logged as a bug.
 */
export type GrantVerifier = (grant: string, call: GrantedCall) => Promise<void>;

/** A verifier's refusal: `unauthenticated` (no usable grant) or `forbidden` (a grant that does not admit this call). */
export class GrantRefusal extends Error {
  readonly kind: Extract<ProtocolErrorKind, "unauthenticated" | "forbidden">;

  constructor(
    kind: Extract<ProtocolErrorKind, "unauthenticated" | "forbidden">,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "GrantRefusal";
    this.kind = kind;
  }
}

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/;

/**
 * The grant of an `Authorization` header value (`Bearer <token>`, scheme case-sensitive as DESIGN §5
 * writes it; token68 syntax of RFC 7235 §2.1). Throws `GrantRefusal("unauthenticated")` naming the
 * header and the expected form when it is missing or malformed.
 */
export function grantFromHeader(authorization: string | string[] | undefined): string {
  if (authorization === undefined || authorization === "") {
    throw new GrantRefusal(
      "unauthenticated",
      "header Authorization is missing: send the operator's grant as 'Authorization: Bearer <grant>'",
    );
  }
  if (Array.isArray(authorization)) {
    throw new GrantRefusal("unauthenticated", "header Authorization was sent more than once; send one grant");
  }
  const match = BEARER.exec(authorization);
  if (!match) {
    throw new GrantRefusal(
      "unauthenticated",
      "header Authorization is not a bearer token: send 'Authorization: Bearer <grant>'",
    );
  }
  return match[1]!;
}
