/**
 * Conversions between Postgres column values and the TypeScript values the store hands out. Postgres
 * `bigint` arrives from `pg` as a decimal string (pools from `createPool` already parse it to a
 * number); both forms are accepted here so row mapping does not depend on how a pool was configured.
 */
import pg from "pg";
import { GatehouseError } from "../core/errors.ts";

/** OID of Postgres `int8`/`bigint` (`pg_type.oid`). */
const INT8_OID = 20;

/**
 * Parses a bigint column value into a JavaScript number.
 * Errors: `GatehouseError("internal")` if it is not an integer within ±(2^53 − 1) — the range in which
 * microsecond timestamps and sequence numbers stay exact.
 */
export function toSafeInteger(value: unknown, column: string): number {
  const n = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) {
    throw new GatehouseError("internal", `column ${column}: ${String(value)} is not a safe integer`);
  }
  return n;
}

/** Like {@link toSafeInteger}, passing `null`/`undefined` through as `undefined`. */
export function toOptionalSafeInteger(value: unknown, column: string): number | undefined {
  return value === null || value === undefined ? undefined : toSafeInteger(value, column);
}

/** A bytea column value as a `Uint8Array`. Errors: `internal` if the value is not a Buffer. */
export function toBytes(value: unknown, column: string): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new GatehouseError("internal", `column ${column}: expected bytea`);
  }
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

/** A nullable text column as `string | undefined`. */
export function toOptionalString(value: unknown): string | undefined {
  return value === null || value === undefined ? undefined : String(value);
}

/**
 * Type parsers for pools created by the store: `bigint` → number (exact below 2^53, else an error
 * naming the value), everything else as `pg` parses it by default.
 */
export const storeTypeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8_OID && format !== "binary") return (text: string) => toSafeInteger(text, "bigint");
    return pg.types.getTypeParser(oid, format as "text");
  }) as pg.CustomTypesConfig["getTypeParser"],
};
