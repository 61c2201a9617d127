import { describe, expect, it } from "vitest";
import type { AuditEntry } from "../../core/ports.ts";
import { AppendBatcher } from "./append-batcher.ts";

const entry = (kind: string): AuditEntry => ({ kind, actor: "gatehouse", atMicros: 1, payload: {} });

/** A batcher over a fake writer that records each transaction's kinds and numbers the records. */
function recordingBatcher() {
  const transactions: string[][] = [];
  let seq = 0;
  const batcher = new AppendBatcher(async (entries) => {
    transactions.push(entries.map((e) => e.kind));
    return entries.map(() => ({ seq: ++seq, hash: String(seq) }));
  }, 500);
  return { batcher, transactions };
}

describe("the audit append batcher", () => {
  it("writes the entries of one appendAll in one transaction, in order", async () => {
    const { batcher, transactions } = recordingBatcher();
    const appended = await batcher.appendAll([entry("approval.decided"), entry("approval.approved")]);
    expect(transactions).toEqual([["approval.decided", "approval.approved"]]);
    expect(appended.map((a) => a.seq)).toEqual([1, 2]);
  });

  it("keeps the order of appends queued behind a transaction in flight", async () => {
    const { batcher, transactions } = recordingBatcher();
    const first = batcher.append(entry("a"));
    const rest = batcher.appendAll([entry("b"), entry("c")]);
    await Promise.all([first, rest]);
    expect(transactions.flat()).toEqual(["a", "b", "c"]);
  });
});
