import { describe, expect, it } from "vitest";
import { bindingOf } from "./identities.ts";

const secret = (name: string, data: Record<string, string>) => ({
  metadata: { name },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
});

describe("identity bindings", () => {
  it("maps a user to the account its labelled Secret names", () => {
    expect(bindingOf([secret("a", { alice: "ALICE01\n" })], "alice", "x")).toEqual({
      bound: true,
      account: "ALICE01",
    });
  });

  it("leaves a user without a binding unbound, saying where it looked", () => {
    const binding = bindingOf([secret("a", { alice: "ALICE01" })], "mallory", "the Secrets in plant-a");
    expect(binding).toEqual({
      bound: false,
      reason: "mallory has no account binding in the Secrets in plant-a",
    });
  });

  it("accepts the same account from two Secrets but refuses two different accounts", () => {
    expect(bindingOf([secret("a", { bob: "B" }), secret("b", { bob: "B" })], "bob", "x")).toMatchObject({
      bound: true,
    });
    const ambiguous = bindingOf([secret("a", { bob: "B" }), secret("b", { bob: "C" })], "bob", "x");
    expect(ambiguous).toMatchObject({ bound: false });
    expect(ambiguous.bound === false && ambiguous.reason).toMatch(/2 different accounts/);
  });

  it("treats an empty value as no binding", () => {
    expect(bindingOf([secret("a", { alice: "  " })], "alice", "x")).toMatchObject({ bound: false });
  });
});
