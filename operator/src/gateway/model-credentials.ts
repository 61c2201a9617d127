/**
 * What the model proxy (gateway/model-proxy.ts) keeps from passing between a pod and an endpoint:
 * top-level credential fields of a request body (refused), and the endpoint's key and anything shaped
 * like a credential in an upstream error answer (redacted, and the answer cut to UPSTREAM_ERROR_BYTES).
 */

/** Bytes of an upstream error answer returned and logged; the rest is read and dropped. */
export const UPSTREAM_ERROR_BYTES = 8 * 1024;
/** Bytes read past UPSTREAM_ERROR_BYTES so that a key straddling the cut is still redacted whole. */
const REDACTION_MARGIN = 1024;

/**
 * Top-level body fields through which some endpoints and proxies take a credential or a target of
 * their own (LiteLLM's `api_key`/`api_base`, `extra_headers`, …): a request naming one is refused.
 */
export const KEY_LIKE_FIELDS = new Set([
  "api_key",
  "apikey",
  "api-key",
  "key",
  "authorization",
  "headers",
  "extra_headers",
  "api_base",
  "base_url",
  "organization",
  "project",
  "token",
  "access_token",
  "secret",
  "password",
  "credentials",
]);

/** The top-level fields of `body` that are key-like (compared without case and `-`/`_`). */
export function keyLikeFields(body: Record<string, unknown>): string[] {
  const normal = (name: string) => name.toLowerCase().replace(/-/g, "_");
  const known = new Set([...KEY_LIKE_FIELDS].map(normal));
  return Object.keys(body).filter((name) => known.has(normal(name)));
}

/** Shapes of credentials an endpoint may echo: OpenAI-style keys, bearer values, JWTs. */
const CREDENTIAL_SHAPES = [
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
];

/** `text` with `secrets` (exact) and credential-shaped substrings replaced by `[REDACTED]`. */
export function redactCredentials(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) if (secret.length >= 4) redacted = redacted.split(secret).join("[REDACTED]");
  for (const shape of CREDENTIAL_SHAPES) redacted = redacted.replace(shape, "[REDACTED]");
  return redacted;
}

/** `text` cut to at most `bytes` bytes of UTF-8, at a character boundary. */
export function truncateUtf8(text: string, bytes: number): string {
  const encoded = Buffer.from(text, "utf8");
  if (encoded.length <= bytes) return text;
  let end = bytes;
  // Back off continuation bytes (10xxxxxx) so no character is cut in two.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return encoded.subarray(0, end).toString("utf8");
}

/**
 * An endpoint's error answer as the pod and the log get it: redacted while whole (a key the cut would
 * split is still found, up to REDACTION_MARGIN bytes of it), then cut to UPSTREAM_ERROR_BYTES.
 */
export async function errorAnswerOf(
  body: AsyncIterable<Uint8Array>,
  key: string | undefined,
): Promise<{ text: string; cut: boolean }> {
  const read = await readBounded(body, UPSTREAM_ERROR_BYTES + REDACTION_MARGIN);
  const redacted = redactCredentials(read.text, key ? [key] : []);
  const text = truncateUtf8(redacted, UPSTREAM_ERROR_BYTES);
  return { text, cut: read.cut || text.length < redacted.length };
}

/** Reads at most `limit` bytes of `body` and drains the rest; whether it was cut. */
async function readBounded(
  body: AsyncIterable<Uint8Array>,
  limit: number,
): Promise<{ text: string; cut: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let cut = false;
  for await (const chunk of body) {
    if (size >= limit) {
      cut = true;
      continue;
    }
    const part = Buffer.from(chunk).subarray(0, limit - size);
    if (part.length < chunk.byteLength) cut = true;
    chunks.push(part);
    size += part.length;
  }
  // A multi-byte character cut at the limit becomes U+FFFD: the text stays valid.
  return { text: Buffer.concat(chunks).toString("utf8"), cut };
}
