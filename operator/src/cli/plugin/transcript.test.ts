/** The transcript's text form of the events that carry structure rather than text. */
import { describe, expect, it } from "vitest";
import { transcriptLines } from "./transcript.ts";

describe("transcriptLines", () => {
  it("marks a compaction with what the model saw from then on", () => {
    const compaction = {
      reason: "window",
      summarizedTurns: 40,
      keptTurns: 6,
      tokensBefore: 3_900,
      tokensAfter: 1_800,
      window: 4_000,
    };
    const [line] = transcriptLines([
      {
        seq: 9,
        time: "2026-12-06T10:00:00Z",
        source: "agent",
        kind: "compaction",
        payload: { turn: 41, compaction },
      },
    ]);
    expect(line).toBe(
      "   9  2026-12-06T10:00:00Z  agent  compaction        context compacted (window): 40 turns summarized, 6 kept; about 3900 → 1800 of 4000 tokens",
    );
  });
});
