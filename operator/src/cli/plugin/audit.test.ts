import { describe, expect, it } from "vitest";
import { auditArguments } from "./audit.ts";

describe("auditArguments", () => {
  it("passes each trusted key id as --trust-kid=KID, so an id beginning with - is not read as an option", () => {
    const kid = `-${"x".repeat(42)}`;
    const args = auditArguments({
      namespace: "gatehouse-system",
      json: false,
      trustKids: [kid, "y".repeat(43)],
    });
    expect(args).toContain(`--trust-kid=${kid}`);
    expect(args).toContain(`--trust-kid=${"y".repeat(43)}`);
    expect(args).not.toContain("--trust-kid");
  });
});
