import { describe, expect, it } from "vitest";
import { schemaProblems } from "./schema-check.ts";

const objectOf = (properties: Record<string, unknown>) => ({ type: "object", properties });

describe("schemaProblems", () => {
  it("accepts an object schema whose arrays declare their items", () => {
    expect(
      schemaProblems(objectOf({ ids: { type: "array", items: { type: "string" } } }), { type: "object" }),
    ).toEqual([]);
  });

  it("names the pointer of an array without items, in either schema", () => {
    expect(
      schemaProblems(objectOf({ lines: { type: "array" } }), objectOf({ rows: { type: ["array", "null"] } })),
    ).toEqual([
      'inputSchema at /properties/lines: an array must declare its items ("items": {...})',
      'outputSchema at /properties/rows: an array must declare its items ("items": {...})',
    ]);
  });

  it("refuses arguments that are not an object and schemas ajv cannot compile", () => {
    const problems = schemaProblems(
      { type: "string" },
      { type: "object", properties: { a: { type: "nope" } } },
    );
    expect(problems[0]).toMatch(/^inputSchema: the top level must be/);
    expect(problems[1]).toMatch(/^outputSchema does not compile/);
  });

  it("does not mistake enum values for schemas", () => {
    expect(schemaProblems(objectOf({ kind: { enum: [{ type: "array" }] } }), { type: "object" })).toEqual([]);
  });
});
