import { describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "../../core/audit.ts";
import { retainedCheckpoints } from "../../core/witness-retention.ts";
import {
  checkSignatures,
  newWitnessKey,
  privateKeyOf,
  publicPartOf,
  signCheckpoint,
} from "../../core/witness-signature.ts";
import {
  decodeCheckpoints,
  decodeWitnessDocument,
  encodeCheckpoints,
  encodeWitnessKeys,
  microsOf,
  microTimeOf,
} from "./configmap-data.ts";

const hash = (n: number) => n.toString(16).padStart(64, "0");
const checkpoint = (seq: number, h = hash(seq)): AuditCheckpoint => ({
  seq,
  headHash: h,
  atMicros: 1_795_000_000_000_000 + seq,
});
const key = newWitnessKey(new Date("2026-12-01T00:00:00.000Z"));
const signing = { kid: key.kid, privateKey: privateKeyOf(key.privateJwk!) };

describe("the witness's ConfigMap", () => {
  it("writes times as RFC 3339 with microseconds and reads them back exactly", () => {
    expect(microTimeOf(1_795_000_000_123_456)).toBe("2026-11-18T11:06:40.123456Z");
    expect(microsOf("2026-11-18T11:06:40.123456Z")).toBe(1_795_000_000_123_456);
    expect(microsOf(microTimeOf(1_795_000_000_000_007))).toBe(1_795_000_000_000_007);
  });

  it("round-trips signed checkpoints through checkpoints.json, ascending by seq", () => {
    const signed = [signCheckpoint(checkpoint(9), signing), signCheckpoint(checkpoint(3), signing)];
    const text = encodeCheckpoints(signed);
    expect(JSON.parse(text).map((c: { seq: number }) => c.seq)).toEqual([3, 9]);
    expect(JSON.parse(text)[0]).toEqual({
      seq: 3,
      hash: hash(3),
      at: microTimeOf(checkpoint(3).atMicros),
      kid: key.kid,
      sig: signed[1]!.sig,
    });
    const decoded = decodeCheckpoints(text, "cm");
    expect(decoded).toEqual([signed[1], signed[0]]);
    expect(checkSignatures(decoded, [publicPartOf(key)]).map((c) => c.status)).toEqual(["valid", "valid"]);
    expect(decodeCheckpoints(undefined, "cm")).toEqual([]);
  });

  it("reads the previous version's ConfigMap: {seq, hash, at} entries and no keys.json", () => {
    const legacy = `[\n${JSON.stringify({ seq: 4, hash: hash(4), at: "2026-11-18T11:06:40.000004Z" })}\n]\n`;
    const document = decodeWitnessDocument({ "checkpoints.json": legacy }, "cm");
    expect(document).toEqual({
      checkpoints: [{ seq: 4, headHash: hash(4), atMicros: 1_795_000_000_000_004 }],
      keys: [],
    });
    expect(checkSignatures(document.checkpoints, document.keys)[0]?.status).toBe("unsigned_legacy");
    // New entries are added beside the legacy ones.
    const next = encodeCheckpoints([...document.checkpoints, signCheckpoint(checkpoint(8), signing)]);
    const both = decodeWitnessDocument(
      { "checkpoints.json": next, "keys.json": encodeWitnessKeys([publicPartOf(key)]) },
      "cm",
    );
    expect(checkSignatures(both.checkpoints, both.keys).map((c) => c.status)).toEqual([
      "unsigned_legacy",
      "valid",
    ]);
  });

  it("publishes public keys only", () => {
    const text = encodeWitnessKeys([publicPartOf(key)]);
    expect(text).not.toContain(key.privateJwk!.d);
    expect(text).not.toContain('"d"');
    expect(decodeWitnessDocument({ "keys.json": text }, "cm").keys).toEqual([publicPartOf(key)]);
  });

  it("refuses content that is not a list of checkpoints or keys, naming the ConfigMap", () => {
    expect(() => decodeCheckpoints('[{"seq":1,"hash":"xyz","at":"now"}]', "ConfigMap a/b")).toThrow(
      /ConfigMap a\/b checkpoints.json is not a JSON list/,
    );
    expect(() => decodeCheckpoints("{", "cm")).toThrow(/not a JSON list/);
    expect(() => decodeWitnessDocument({ "keys.json": '[{"kid":"k"}]' }, "ConfigMap a/b")).toThrow(
      /ConfigMap a\/b keys.json is not a JSON list of \{kid, createdAt, publicJwk\}/,
    );
    const withPrivate = { ...publicPartOf(key), publicJwk: key.privateJwk };
    expect(() => decodeWitnessDocument({ "keys.json": JSON.stringify([withPrivate]) }, "cm")).toThrow(
      /keys.json/,
    );
  });

  it("fits 5 years of signed checkpoints a minute apart in a ConfigMap (1 MiB) with room to spare", () => {
    const MINUTE = 60_000_000;
    const start = Date.UTC(2026, 0, 1) * 1000;
    const count = 5 * 365 * 24 * 60;
    // One a minute for the last two days; before that one an hour is enough: retention keeps the
    // first of each hour, day or week there, the same checkpoints as from one a minute.
    const minutes = Array.from({ length: count }, (_, i) => i).filter(
      (i) => i >= count - 2 * 24 * 60 || i % 60 === 0,
    );
    const all = minutes.map((i) => ({
      seq: 1_000_000_000 + i * 1000,
      headHash: "ab".repeat(32),
      atMicros: start + i * MINUTE + 123_456,
    }));
    const kept = retainedCheckpoints(all, all.at(-1)!.atMicros).map((c) => signCheckpoint(c, signing));
    const bytes =
      Buffer.byteLength(encodeCheckpoints(kept)) + Buffer.byteLength(encodeWitnessKeys([publicPartOf(key)]));
    expect(kept.length).toBeLessThan(700);
    expect(bytes).toBeLessThan(256 * 1024);
  });
});
