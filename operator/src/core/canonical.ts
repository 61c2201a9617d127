/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization and SHA-256 digests. Every digest Gatehouse
 * compares across processes (arguments digest, audit hashes, grant `argsDigest`) is computed here, over
 * the canonical UTF-8 bytes — never over `JSON.stringify` output or Postgres `jsonb::text`, whose key
 * order is not defined.
 *
 * Source: RFC 8785 §3 (keys sorted by UTF-16 code units, ECMAScript number form); implementation: the
 * `canonicalize` package (5.1.0), which also rejects lone surrogates, NaN and ±Infinity.
 */
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { GatehouseError } from "./errors.ts";

/** A JSON value as parsed by `JSON.parse` (no `undefined`, functions, bigint or non-finite numbers). */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * RFC 8785 canonical JSON text of `value`.
 * Errors: `GatehouseError("internal")` when `value` is not representable in I-JSON (lone surrogate,
 * NaN/Infinity, bigint, a cycle, or `undefined` at the top level).
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (cause) {
    throw new GatehouseError("internal", `value cannot be canonicalized (RFC 8785): ${String(cause)}`, {
      cause,
    });
  }
  if (typeof text !== "string") {
    throw new GatehouseError("internal", "value cannot be canonicalized (RFC 8785): it has no JSON form");
  }
  return text;
}

/**
 * True when `text`, which `JSON.parse` turned into `parsed`, is certainly `canonicalJson(parsed)`; false
 * means "compute it to know". A shortcut for checking stored bytes without re-serializing them: for
 * values from `JSON.parse`, RFC 8785 output is `JSON.stringify` output with every object's keys sorted
 * by UTF-16 code units, strings and numbers written alike. Text with a `\u` escape (where a lone
 * surrogate, which RFC 8785 refuses, could hide) is left to the full computation.
 */
export function isCanonicalText(text: string, parsed: JsonValue): boolean {
  return !text.includes("\\u") && keysSorted(parsed) && JSON.stringify(parsed) === text;
}

/** Every object's own keys, in property order, ascending by UTF-16 code units (`<` on strings). */
function keysSorted(value: JsonValue): boolean {
  if (value === null || typeof value !== "object") return true;
  if (Array.isArray(value)) return value.every(keysSorted);
  let previous: string | undefined;
  for (const key in value) {
    if (previous !== undefined && !(previous < key)) return false;
    if (!keysSorted(value[key] as JsonValue)) return false;
    previous = key;
  }
  return true;
}

/** RFC 8785 canonical bytes of `value` (UTF-8). Errors as {@link canonicalJson}. */
export function canonicalBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalJson(value));
}

/** Lower-case hex SHA-256 (64 characters) of a string's UTF-8 bytes or of raw bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Raw SHA-256 (32 bytes) of the concatenation of `parts`. */
export function sha256Bytes(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
}

/** Hex SHA-256 of the RFC 8785 canonical form of `value`: the "arguments digest" of DESIGN §2/§4. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
