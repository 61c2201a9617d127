import type { V1Secret } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { newWitnessKey } from "../../core/witness-signature.ts";
import { witnessKeysOfSecret } from "./key.ts";

const secretOf = (keys: unknown): V1Secret => ({
  metadata: { namespace: "gatehouse-system", name: "gatehouse-audit-witness-key" },
  data: { "keys.json": Buffer.from(JSON.stringify(keys)).toString("base64") },
});

describe("the witness key Secret", () => {
  it("reads its keys, a retired one without its private part", () => {
    const current = newWitnessKey(new Date("2026-12-01T00:00:00.000Z"));
    const { privateJwk: _d, ...retired } = newWitnessKey(new Date("2026-01-01T00:00:00.000Z"));
    expect(witnessKeysOfSecret(secretOf([retired, current]))).toEqual([retired, current]);
  });

  it.each([
    ["no keys.json", { metadata: { namespace: "n", name: "s" }, data: {} }, /keys.json is missing/],
    [
      "not JSON",
      { metadata: { namespace: "n", name: "s" }, data: { "keys.json": Buffer.from("{").toString("base64") } },
      /is not JSON/,
    ],
    ["not keys", secretOf([{ kid: "k" }]), /is not a list of \{kid, createdAt, publicJwk\[, privateJwk\]\}/],
  ])("names the Secret and the fix when it has %s", (_what, secret, message) => {
    expect(() => witnessKeysOfSecret(secret as V1Secret)).toThrow(message);
    expect(() => witnessKeysOfSecret(secret as V1Secret)).toThrow(/restore it from a backup/);
  });

  it("refuses a key whose kid is not its thumbprint, and a Secret with nothing to sign with", () => {
    const key = newWitnessKey(new Date("2026-12-01T00:00:00.000Z"));
    expect(() => witnessKeysOfSecret(secretOf([{ ...key, kid: "mine" }]))).toThrow(
      /key mine is not named by its RFC 7638 thumbprint/,
    );
    const { privateJwk: _d, ...retired } = key;
    expect(() => witnessKeysOfSecret(secretOf([retired]))).toThrow(/holds no key with a privateJwk/);
  });
});
