import { describe, expect, it } from "vitest";
import { formatTable, humanDuration } from "./table.ts";

describe("kubectl-style text", () => {
  it("aligns columns three spaces apart without trailing spaces", () => {
    expect(
      formatTable(
        ["NAME", "YOU"],
        [
          ["apr-1", "yes"],
          ["apr-22", "no (not an approver)"],
        ],
      ),
    ).toBe("NAME     YOU\napr-1    yes\napr-22   no (not an approver)");
  });

  it("prints ages as kubectl does", () => {
    expect(
      [5e3, 119e3, 150e3, 11 * 60e3, 3 * 3600e3 + 20 * 60e3, 30 * 3600e3, 50 * 3600e3, 10 * 86400e3].map(
        humanDuration,
      ),
    ).toEqual(["5s", "119s", "2m30s", "11m", "3h20m", "30h", "2d2h", "10d"]);
  });
});
