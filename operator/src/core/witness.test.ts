import { describe, expect, it } from "vitest";
import type { AuditCheckpoint } from "./audit.ts";
import { GatehouseError } from "./errors.ts";
import {
  type WitnessDocument,
  type WitnessDocuments,
  type WitnessMetrics,
  type WitnessSigner,
  witnessPublisher,
} from "./witness.ts";
import type { ChainEvidence, WitnessDisagreement } from "./witness-continuity.ts";
import {
  newWitnessKey,
  privateKeyOf,
  publicPartOf,
  signCheckpoint,
  type WitnessKey,
} from "./witness-signature.ts";

const AT = 1_795_000_000_000_000;
const cp = (seq: number, variant = "0"): AuditCheckpoint => ({
  seq,
  headHash: `${variant}${seq.toString(16).padStart(63, "0")}`,
  atMicros: AT + seq * 60_000_000,
});

/** A witness document in memory, versioned like a ConfigMap; `interfere` changes it before the next write once. */
function memoryDocuments(initial?: WitnessDocument) {
  let stored = initial ? { document: structuredClone(initial), version: 1 } : undefined;
  let reads = 0;
  let interfere: ((d: WitnessDocument) => WitnessDocument) | undefined;
  const documents: WitnessDocuments = {
    where: "memory",
    async read() {
      reads++;
      return stored
        ? { document: structuredClone(stored.document), version: String(stored.version) }
        : undefined;
    },
    async write(document, version) {
      if (interfere && stored) {
        stored = { document: interfere(stored.document), version: stored.version + 1 };
        interfere = undefined;
      }
      if (String(stored?.version) !== String(version) && !(stored === undefined && version === undefined)) {
        return "conflict";
      }
      stored = { document: structuredClone(document), version: (stored?.version ?? 0) + 1 };
      return "written";
    },
  };
  return {
    documents,
    get stored() {
      return stored?.document;
    },
    get reads() {
      return reads;
    },
    interfereOnce(change: (d: WitnessDocument) => WitnessDocument) {
      interfere = change;
    },
  };
}

function keySigner(key: WitnessKey): WitnessSigner {
  return {
    async keys() {
      return {
        signing: { kid: key.kid, privateKey: privateKeyOf(key.privateJwk!) },
        published: [publicPartOf(key)],
      };
    },
  };
}

/** The chain agrees with every kept checkpoint (its hashes are `cp(seq)`'s) and every stretch verifies. */
function honestChain(candidate: AuditCheckpoint) {
  return async (kept: AuditCheckpoint[]): Promise<ChainEvidence> => {
    const last = kept.at(-1)?.seq ?? 0;
    return {
      hashes: new Map(kept.map((c) => [c.seq, cp(c.seq).headHash])),
      ...(candidate.seq > last
        ? {
            stretch: {
              fromSeq: last + 1,
              toSeq: candidate.seq,
              report: {
                ok: true,
                records: candidate.seq - last,
                head: { seq: candidate.seq, hash: candidate.headHash },
                badRows: 0,
                gaps: [],
                checkpoints: [{ checkpoint: candidate, status: "ok" as const, message: "ok" }],
              },
            },
          }
        : {}),
    };
  };
}

function recordingMetrics() {
  const events: Array<number | WitnessDisagreement> = [];
  const metrics: WitnessMetrics = { agreed: (seq) => events.push(seq), refused: (d) => events.push(d) };
  return { metrics, events };
}

const key = newWitnessKey(new Date("2026-12-01T00:00:00Z"));

describe("the witness", () => {
  it("publishes signed checkpoints and its public keys, never a private key", async () => {
    const memory = memoryDocuments();
    const witness = witnessPublisher({ documents: memory.documents, signer: keySigner(key) });
    expect(await witness.publish(cp(3), honestChain(cp(3)))).toMatchObject({ outcome: "published", kept: 1 });
    expect(await witness.publish(cp(5), honestChain(cp(5)))).toMatchObject({ outcome: "published", kept: 2 });
    expect(memory.stored?.checkpoints.map((c) => [c.seq, c.kid])).toEqual([
      [3, key.kid],
      [5, key.kid],
    ]);
    expect(memory.stored?.keys).toEqual([publicPartOf(key)]);
    expect(JSON.stringify(memory.stored)).not.toContain(key.privateJwk!.d);
  });

  it("checks again after a concurrent write, and then does not publish over it", async () => {
    const memory = memoryDocuments({
      checkpoints: [signCheckpoint(cp(3), { kid: key.kid, privateKey: privateKeyOf(key.privateJwk!) })],
      keys: [publicPartOf(key)],
    });
    const witness = witnessPublisher({ documents: memory.documents, signer: keySigner(key) });
    // Someone writes a checkpoint with another hash at seq 4 between our read and our write.
    memory.interfereOnce((d) => ({ ...d, checkpoints: [...d.checkpoints, { ...cp(4, "f") }] }));
    const outcome = await witness.publish(cp(5), honestChain(cp(5)));
    expect(outcome).toMatchObject({ outcome: "refused", disagreement: { seq: 4 } });
    expect(memory.stored?.checkpoints.map((c) => c.seq)).toEqual([3, 4]);
  });

  it("refuses at every publication while the chain disagrees, and reports each refusal", async () => {
    const memory = memoryDocuments();
    const { metrics, events } = recordingMetrics();
    const witness = witnessPublisher({ documents: memory.documents, signer: keySigner(key), metrics });
    await witness.publish(cp(3), honestChain(cp(3)));
    const rewritten = async (kept: AuditCheckpoint[]): Promise<ChainEvidence> => ({
      hashes: new Map(kept.map((c) => [c.seq, cp(c.seq, "e").headHash])),
    });
    for (const seq of [6, 7]) {
      expect(await witness.publish(cp(seq, "e"), rewritten)).toMatchObject({
        outcome: "refused",
        disagreement: { seq: 3, reason: "rewritten" },
      });
    }
    expect(events).toEqual([3, expect.objectContaining({ seq: 3 }), expect.objectContaining({ seq: 3 })]);
    expect(memory.stored?.checkpoints.map((c) => c.seq)).toEqual([3]);
  });

  it("trusts its own keys, not keys someone added to the document", async () => {
    const intruder = newWitnessKey(new Date("2026-12-01T00:00:00Z"));
    const forged = signCheckpoint(cp(3), {
      kid: intruder.kid,
      privateKey: privateKeyOf(intruder.privateJwk!),
    });
    const memory = memoryDocuments({ checkpoints: [forged], keys: [publicPartOf(intruder)] });
    const witness = witnessPublisher({ documents: memory.documents, signer: keySigner(key) });
    expect(await witness.publish(cp(5), honestChain(cp(5)))).toMatchObject({
      outcome: "refused",
      disagreement: { seq: 3, reason: "forged" },
    });
  });

  it("refuses, and leaves alone, a document whose content does not parse", async () => {
    const { metrics, events } = recordingMetrics();
    const documents: WitnessDocuments = {
      where: "memory",
      async read() {
        throw new GatehouseError("conflict", "memory checkpoints.json is not a JSON list of checkpoints");
      },
      async write() {
        throw new Error("must not be written");
      },
    };
    const witness = witnessPublisher({ documents, signer: keySigner(key), metrics });
    expect(await witness.publish(cp(3), honestChain(cp(3)))).toEqual({
      outcome: "refused",
      disagreement: {
        seq: 0,
        reason: "forged",
        message: "memory checkpoints.json is not a JSON list of checkpoints",
      },
    });
    expect(events).toHaveLength(1);
  });

  it("reads and writes nothing on a standby", async () => {
    const memory = memoryDocuments();
    const witness = witnessPublisher({
      documents: memory.documents,
      signer: keySigner(key),
      isActive: () => false,
    });
    expect(await witness.publish(cp(3), honestChain(cp(3)))).toEqual({
      outcome: "skipped",
      reason: "standby",
    });
    expect(memory.reads).toBe(0);
  });
});
