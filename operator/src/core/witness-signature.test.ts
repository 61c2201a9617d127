import { createPublicKey, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "./audit.ts";
import {
  checkpointSigningBytes,
  checkSignatures,
  kidOf,
  newWitnessKey,
  privateKeyOf,
  publicPartOf,
  signCheckpoint,
  signingKeyOf,
  trustedWitnessKeys,
  type WitnessCheckpoint,
  type WitnessKey,
} from "./witness-signature.ts";

const checkpoint = (seq: number): AuditCheckpoint => ({
  seq,
  headHash: seq.toString(16).padStart(64, "0"),
  atMicros: 1_795_000_000_000_000 + seq,
});
const now = new Date("2026-12-01T10:00:00.000Z");

/** `sig` (base64url) with the first bit of its first byte flipped. */
function flipFirstBit(sig: string): string {
  const bytes = Buffer.from(sig, "base64url");
  bytes[0] = (bytes[0] ?? 0) ^ 0x80;
  return bytes.toString("base64url");
}
const signer = (key: WitnessKey) => ({ kid: key.kid, privateKey: privateKeyOf(key.privateJwk!) });

describe("checkpoint signatures", () => {
  it("sign the RFC 8785 JSON of type, version, seq, hash, time and kid", () => {
    expect(new TextDecoder().decode(checkpointSigningBytes(checkpoint(255), "k1"))).toBe(
      `{"atMicros":1795000000000255,"hash":"${"0".repeat(62)}ff","kid":"k1","seq":255,"type":"gatehouse.audit.checkpoint","v":1}`,
    );
  });

  it("verify with node:crypto's Ed25519 over exactly those bytes", () => {
    const key = newWitnessKey(now);
    const signed = signCheckpoint(checkpoint(7), signer(key));
    const publicKey = createPublicKey({ key: { ...key.publicJwk }, format: "jwk" });
    const bytes = checkpointSigningBytes(checkpoint(7), key.kid);
    expect(verify(null, bytes, publicKey, Buffer.from(signed.sig!, "base64url"))).toBe(true);
    expect(checkSignatures([signed], [publicPartOf(key)])).toEqual([
      { seq: 7, status: "valid", kid: key.kid, message: `signed by key ${key.kid}` },
    ]);
  });

  it("name a key by the RFC 7638 thumbprint of its public JWK", () => {
    // RFC 8037 Appendix A.3's example key and thumbprint.
    const jwk = { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" } as const;
    expect(kidOf(jwk)).toBe("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    const key = newWitnessKey(now);
    expect(key.kid).toBe(kidOf(key.publicJwk));
    expect(key.privateJwk?.x).toBe(key.publicJwk.x);
  });

  it.each([
    ["hash", (c: WitnessCheckpoint) => ({ ...c, headHash: "f".repeat(64) })],
    ["seq", (c: WitnessCheckpoint) => ({ ...c, seq: c.seq + 1 })],
    ["time", (c: WitnessCheckpoint) => ({ ...c, atMicros: c.atMicros + 1 })],
    // One bit of the signature's first byte: replacing base64url characters could leave the bytes the
    // same (the last character's padding bits; or the characters were those already), 1 run in 256.
    ["signature", (c: WitnessCheckpoint) => ({ ...c, sig: flipFirstBit(c.sig!) })],
  ])("fail when the %s was changed after signing", (_field, change) => {
    const key = newWitnessKey(now);
    const forged = change(signCheckpoint(checkpoint(7), signer(key)));
    expect(checkSignatures([forged], [publicPartOf(key)])[0]).toMatchObject({ status: "bad_signature" });
  });

  it("fail for a checkpoint signed by a key that is not published", () => {
    const ours = newWitnessKey(now);
    const theirs = newWitnessKey(now);
    const forged = signCheckpoint(checkpoint(7), signer(theirs));
    expect(checkSignatures([forged], [publicPartOf(ours)])[0]).toMatchObject({
      status: "unknown_kid",
      message: `signed by kid ${theirs.kid}, which is not a published (or, with --trust-kid, a trusted) witness key`,
    });
  });

  it("fail for a published key that another key's signature claims by kid", () => {
    const ours = newWitnessKey(now);
    const theirs = newWitnessKey(now);
    // Someone publishes their key under our kid and signs with it.
    const forged = signCheckpoint(checkpoint(7), {
      kid: ours.kid,
      privateKey: privateKeyOf(theirs.privateJwk!),
    });
    const impostor = { ...publicPartOf(theirs), kid: ours.kid };
    expect(checkSignatures([forged], [impostor])[0]).toMatchObject({ status: "unknown_kid" });
  });

  it("fail for a kid without sig and a sig without kid", () => {
    const key = newWitnessKey(now);
    const signed = signCheckpoint(checkpoint(7), signer(key));
    const { sig: _sig, ...kidOnly } = signed;
    const { kid: _kid, ...sigOnly } = signed;
    const checks = checkSignatures([kidOnly, { ...sigOnly, seq: 8 }], [publicPartOf(key)]);
    expect(checks.map((c) => c.status)).toEqual(["bad_signature", "bad_signature"]);
  });

  it("report checkpoints older than every signed one as unsigned (legacy), and later unsigned ones as failures", () => {
    const key = newWitnessKey(now);
    const kept: WitnessCheckpoint[] = [
      checkpoint(1),
      checkpoint(2),
      signCheckpoint(checkpoint(3), signer(key)),
      checkpoint(4),
    ];
    expect(checkSignatures(kept, [publicPartOf(key)]).map((c) => c.status)).toEqual([
      "unsigned_legacy",
      "unsigned_legacy",
      "valid",
      "unsigned_after_signing",
    ]);
  });

  it("accept a witness of legacy checkpoints only, and fail one whose signed checkpoints were removed", () => {
    expect(checkSignatures([checkpoint(1), checkpoint(2)], []).map((c) => c.status)).toEqual([
      "unsigned_legacy",
      "unsigned_legacy",
    ]);
    const key = newWitnessKey(now);
    expect(checkSignatures([checkpoint(1)], [publicPartOf(key)])[0]).toMatchObject({
      status: "unsigned_after_signing",
    });
  });

  it("sign with the newest key that has its private part; retired keys only check", () => {
    const old = newWitnessKey(new Date("2026-01-01T00:00:00Z"));
    const current = newWitnessKey(new Date("2026-06-01T00:00:00Z"));
    const retired = { ...newWitnessKey(new Date("2026-09-01T00:00:00Z")) };
    delete retired.privateJwk;
    expect(signingKeyOf([current, retired, old])?.kid).toBe(current.kid);
    expect(signingKeyOf([retired])).toBeUndefined();
    const byOld = signCheckpoint(checkpoint(1), signer(old));
    const byCurrent = signCheckpoint(checkpoint(2), signer(current));
    expect(
      checkSignatures([byOld, byCurrent], [old, current].map(publicPartOf)).map((c) => c.status),
    ).toEqual(["valid", "valid"]);
  });

  it("fail an unsigned checkpoint taken after the witness's first key was made, though no signed one is kept", () => {
    const key = newWitnessKey(new Date(Date.UTC(2026, 10, 18, 11, 6, 40) + 500));
    const before = checkpoint(0); // 2026-11-18T11:06:40.000000Z
    const after = { ...checkpoint(9), atMicros: Date.UTC(2026, 10, 18, 11, 6, 41) * 1000 };
    expect(checkSignatures([before, after], [publicPartOf(key)], false).map((c) => c.status)).toEqual([
      "unsigned_legacy",
      "unsigned_after_signing",
    ]);
  });

  it("count only the pinned keys with --trust-kid: a key added to the document signs nothing that counts", () => {
    const ours = newWitnessKey(now);
    const theirs = newWitnessKey(now);
    const published = [publicPartOf(ours), publicPartOf(theirs)];
    const forged = signCheckpoint(checkpoint(9), signer(theirs));
    expect(checkSignatures([forged], published).map((c) => c.status)).toEqual(["valid"]);
    const trust = trustedWitnessKeys(published, [ours.kid]);
    expect(trust.keys.map((k) => k.kid)).toEqual([ours.kid]);
    expect(checkSignatures([forged], trust.keys, trust.signingBegan).map((c) => c.status)).toEqual([
      "unknown_kid",
    ]);
  });

  it("treat signing as begun with --trust-kid, so a document stripped of its keys and signed entries fails", () => {
    const ours = newWitnessKey(now);
    const stripped = [checkpoint(1), checkpoint(2)];
    expect(checkSignatures(stripped, []).map((c) => c.status)).toEqual([
      "unsigned_legacy",
      "unsigned_legacy",
    ]);
    const trust = trustedWitnessKeys([], [ours.kid]);
    expect(checkSignatures(stripped, trust.keys, trust.signingBegan).map((c) => c.status)).toEqual([
      "unsigned_after_signing",
      "unsigned_after_signing",
    ]);
    expect(trustedWitnessKeys([publicPartOf(ours)], undefined)).toEqual({
      keys: [publicPartOf(ours)],
      signingBegan: true,
    });
  });
});
