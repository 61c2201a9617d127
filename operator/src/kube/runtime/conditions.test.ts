import { describe, expect, it } from "vitest";
import { setCondition } from "./conditions.ts";

describe("setCondition", () => {
  const t1 = new Date("2026-11-29T10:00:00.123Z");
  const t2 = new Date("2026-11-29T11:00:00Z");

  it("keeps lastTransitionTime when the status does not change", () => {
    const first = setCondition(undefined, { type: "Ready", status: "True", reason: "A", message: "a" }, t1);
    const second = setCondition(first, { type: "Ready", status: "True", reason: "B", message: "b" }, t2);
    expect(second).toEqual([
      {
        type: "Ready",
        status: "True",
        reason: "B",
        message: "b",
        lastTransitionTime: "2026-11-29T10:00:00Z",
      },
    ]);
  });

  it("moves lastTransitionTime when the status changes, and leaves other types alone", () => {
    const list = setCondition(
      setCondition(undefined, { type: "Ready", status: "True", reason: "A", message: "" }, t1),
      { type: "Healthy", status: "True", reason: "A", message: "" },
      t1,
    );
    const next = setCondition(list, { type: "Ready", status: "False", reason: "Down", message: "" }, t2);
    expect(next.find((c) => c.type === "Ready")?.lastTransitionTime).toBe("2026-11-29T11:00:00Z");
    expect(next.find((c) => c.type === "Healthy")?.lastTransitionTime).toBe("2026-11-29T10:00:00Z");
  });
});
