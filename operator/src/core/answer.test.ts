import { describe, expect, it } from "vitest";
import { answerFromExecution, truncateForModel } from "./answer.ts";
import type { ExecutionRecord } from "./ports.ts";

describe("answers for the model", () => {
  it("leaves content that fits unchanged", () => {
    expect(truncateForModel("short", 100, "execution x")).toBe("short");
  });

  it("truncates large content at a character boundary with a marker naming the full size", () => {
    const content = "€".repeat(1000); // 3000 bytes
    const cut = truncateForModel(content, 200, "execution abc");
    expect(new TextEncoder().encode(cut).length).toBeLessThanOrEqual(200);
    expect(cut).toMatch(
      /^€+\n…\[truncated by Gatehouse: \d+ of 3000 bytes shown; the full result is kept with execution abc\]$/,
    );
  });

  it("reports forbidden as final", () => {
    const record = {
      id: "e1",
      state: "failed",
      errorKind: "forbidden",
      receipt: { status: "failed", errorKind: "forbidden", message: "bob lacks publish rights" },
    } as ExecutionRecord;
    const answer = answerFromExecution(record, 1000);
    expect(answer).toMatchObject({ status: "failed", errorKind: "forbidden", executionId: "e1" });
    expect(answer.content).toContain("bob lacks publish rights");
    expect(answer.content).toContain("do not retry");
  });
});
