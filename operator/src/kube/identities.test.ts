import { describe, expect, it } from "vitest";
import { IDENTITY_BINDING_LABEL } from "../api/well-known.ts";
import { bindingOf, bindingSecretOf, namespaceBindingsOf, publishedBindingsOf } from "./identities.ts";
import { type NamespaceState, publishedData } from "./identity-mirror.ts";

const secret = (name: string, data: Record<string, string>, provider?: string) => ({
  metadata: { name, ...(provider ? { labels: { [IDENTITY_BINDING_LABEL]: provider } } : {}) },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
});
const bound = (name: string, data: Record<string, string>) => bindingSecretOf(secret(name, data));

describe("identity bindings", () => {
  it("maps a user to the account its labelled Secret names", () => {
    expect(bindingOf([bound("a", { alice: "ALICE01\n" })], "alice", "x")).toEqual({
      bound: true,
      account: "ALICE01",
    });
  });

  it("leaves a user without a binding unbound, saying where it looked", () => {
    const binding = bindingOf([bound("a", { alice: "ALICE01" })], "mallory", "the Secrets in plant-a");
    expect(binding).toEqual({
      bound: false,
      reason: "mallory has no account binding in the Secrets in plant-a",
    });
  });

  it("accepts the same account from two Secrets but refuses two different accounts", () => {
    expect(bindingOf([bound("a", { bob: "B" }), bound("b", { bob: "B" })], "bob", "x")).toMatchObject({
      bound: true,
    });
    const ambiguous = bindingOf([bound("a", { bob: "B" }), bound("b", { bob: "C" })], "bob", "x");
    expect(ambiguous).toMatchObject({ bound: false });
    expect(ambiguous.bound === false && ambiguous.reason).toMatch(/2 different accounts \(Secrets a, b\)/);
  });

  it("treats an empty value as no binding, and no inherited member as a user", () => {
    expect(bindingOf([bound("a", { alice: "  " })], "alice", "x")).toMatchObject({ bound: false });
    expect(bindingOf([bound("a", { alice: "A" })], "constructor", "x")).toMatchObject({ bound: false });
    expect(bindingOf([bound("a", { alice: "A" })], "__proto__", "x")).toMatchObject({ bound: false });
  });
});

describe("published identity bindings", () => {
  const secrets = [
    secret("z-more", { bob: "B2" }, "aps"),
    secret("accounts", { bob: "B", alice: " ", carol: "C" }, "aps"),
    secret("ledger", { alice: "L1" }, "ledger"),
    secret("unlabelled", { mallory: "M" }),
  ];

  it("publishes user names and accounts by provider, sorted, nothing of an unlabelled Secret", () => {
    expect(namespaceBindingsOf(secrets)).toEqual({
      aps: [
        { secret: "accounts", accounts: { bob: "B", carol: "C" } },
        { secret: "z-more", accounts: { bob: "B2" } },
      ],
      ledger: [{ secret: "ledger", accounts: { alice: "L1" } }],
    });
    // Equal bindings in any order are equal text, so an unchanged set writes nothing.
    expect(JSON.stringify(namespaceBindingsOf([...secrets].reverse()))).toBe(
      JSON.stringify(namespaceBindingsOf(secrets)),
    );
  });

  it("keys listed namespaces, keeps a pending one's last publication, drops refused and unwatched ones", () => {
    const states = new Map<string, NamespaceState>([
      ["plant-b", { state: "listed", secrets }],
      ["plant-a", { state: "pending" }],
      ["plant-c", { state: "refused" }],
      ["plant-d", { state: "pending" }],
    ]);
    const data = publishedData(states, { "plant-a": "{}", "plant-c": "{}", gone: "{}" });
    expect(Object.keys(data)).toEqual(["plant-a", "plant-b"]);
    expect(data["plant-a"]).toBe("{}");
    expect(publishedBindingsOf(data, "plant-b")).toEqual(namespaceBindingsOf(secrets));
    expect(publishedBindingsOf(data, "plant-c")).toBeUndefined();
  });

  it("refuses published text that is not the controller's shape, naming the namespace", () => {
    expect(() => publishedBindingsOf({ "plant-a": "nope" }, "plant-a")).toThrow(/plant-a are not JSON/);
    expect(() => publishedBindingsOf({ "plant-a": '{"aps": [{"secret": 1}]}' }, "plant-a")).toThrow(
      /plant-a are malformed/,
    );
  });
});
