import { describe, expect, it } from "vitest";
import type { CapabilityOffer, Manifest } from "../contract.ts";
import { capabilityIdProblems, exampleCoverageProblems, manifestSchemaProblems } from "./manifest-checks.ts";

function offer(id: string, inputSchema: Record<string, unknown>, outputSchema: Record<string, unknown> = {}) {
  const offered: CapabilityOffer = {
    id,
    description: "d",
    effect: "read",
    mode: "sync",
    idempotency: "natural",
    inputSchema,
    outputSchema,
  };
  return offered;
}

function manifestOf(...capabilities: CapabilityOffer[]): Manifest {
  return { provider: "p", version: "1", requiresIdentity: false, capabilities };
}

const objectInput = { type: "object", properties: { id: { type: "string" } } };

describe("contract-kit manifest checks", () => {
  it("finds nothing wrong with unique ids, strict schemas and arrays with items", () => {
    const manifest = manifestOf(
      offer("erp.create-order", objectInput, {
        type: "object",
        properties: {
          lines: { type: "array", items: { type: "string" } },
          at: { type: "string", format: "date-time" },
        },
      }),
    );
    expect(capabilityIdProblems(manifest)).toEqual([]);
    expect(manifestSchemaProblems(manifest)).toEqual([]);
  });

  it("names a capability offered twice", () => {
    expect(capabilityIdProblems(manifestOf(offer("a.b", objectInput), offer("a.b", objectInput)))).toEqual([
      "capability a.b is offered twice; ids must be unique",
    ]);
  });

  it("names an id outside the pattern, such as one with an underscore", () => {
    expect(capabilityIdProblems(manifestOf(offer("erp.create_order", objectInput)))).toEqual([
      expect.stringContaining("capability id erp.create_order must match"),
    ]);
  });

  it("names a nested array without items by its JSON pointer", () => {
    const nested = { type: "object", properties: { lines: { type: ["array", "null"] } } };
    expect(manifestSchemaProblems(manifestOf(offer("a.b", objectInput, nested)))).toEqual([
      'a.b: outputSchema at /properties/lines: an array must declare its items ("items": {...})',
    ]);
  });

  it("does not mistake an enum value for a schema", () => {
    const input = { type: "object", properties: { mode: { enum: [{ type: "array" }] } } };
    expect(manifestSchemaProblems(manifestOf(offer("a.b", input)))).toEqual([]);
  });

  it("requires an object at the top of the input schema", () => {
    expect(manifestSchemaProblems(manifestOf(offer("a.b", { type: "string" })))).toEqual([
      'a.b: inputSchema: the top level must be {"type": "object"} (tool arguments are a JSON object)',
    ]);
  });

  it("refuses an unknown keyword or format in strict mode", () => {
    const problems = manifestSchemaProblems(
      manifestOf(
        offer("a.b", { type: "object", propertees: {} }, { type: "string", format: "no-such-format" }),
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^a\.b: inputSchema does not compile: .*propertees/),
      expect.stringMatching(/^a\.b: outputSchema does not compile: .*no-such-format/),
    ]);
  });

  it("names capabilities without an example and examples without a capability", () => {
    const manifest = manifestOf(offer("a.b", objectInput), offer("a.c", objectInput));
    expect(exampleCoverageProblems(manifest, ["a.b", "a.d"])).toEqual([
      "capability a.c is offered but the contract test has no example for it",
      "the contract test has an example for a.d, which the manifest does not offer",
    ]);
  });
});
