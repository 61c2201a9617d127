import { describe, expect, it } from "vitest";
import { checkArguments, parseArguments, validateArguments } from "./arguments.ts";
import { sha256Hex } from "./canonical.ts";
import { MAX_DEPTH, parseIJsonObject } from "./i-json.ts";

function problemOf(raw: string) {
  const result = parseIJsonObject(raw);
  if (result.ok) throw new Error(`expected a refusal for ${JSON.stringify(raw)}`);
  return result.problem;
}

describe("strict I-JSON parsing of tool arguments", () => {
  it("accepts an object and returns its canonical text and digest", () => {
    const result = parseArguments(' { "b": [1, 2.5, "x"], "a": {"d": null, "c": true} } ');
    expect(result).toMatchObject({ ok: true, canonical: '{"a":{"c":true,"d":null},"b":[1,2.5,"x"]}' });
    if (result.ok) expect(result.digest).toBe(sha256Hex(result.canonical));
  });

  it("agrees with JSON.parse on valid documents", () => {
    const samples = [
      '{"s":"tab\\tnew\\nline \\u00e9 \\ud83d\\ude00 \\/ \\\\ \\""}',
      '{"n":[-0, 0, 1e3, -1.5E-3, 123456789, 9007199254740991]}',
      '{"nested":{"a":[[],{}],"b":{"c":{"d":[true,false,null]}}}}',
      '{"é€😀":"raw non-ASCII é€😀"}',
    ];
    for (const text of samples) {
      const result = parseIJsonObject(text);
      expect(result.ok).toBe(true);
      if (result.ok) expect(result.value).toEqual(JSON.parse(text));
    }
  });

  it("refuses empty arguments", () => {
    expect(problemOf("").class).toBe("empty");
    expect(problemOf("  \n\t").class).toBe("empty");
  });

  it("refuses malformed JSON with the position", () => {
    for (const text of [
      "{'a':1}",
      '{"a":1,}',
      '{"a" 1}',
      "{a:1}",
      '{"a":01}',
      '{"a":tru}x',
      '\ufeff{"a":1}',
      '{"a":"\u0001"}',
      '{"a":"\\x"}',
      "{/*c*/}",
    ]) {
      expect(problemOf(text).class, text).toBe("malformed");
    }
    expect(problemOf('{"a":1,}').message).toMatch(/at character 7.*expected a property name/);
  });

  it("refuses truncated JSON and says it looks truncated", () => {
    for (const text of [
      '{"planId": "P-1", "version": 3',
      '{"planId": "P-',
      "{",
      '{"a":[1,2',
      '{"a":tr',
      '{"a":-',
      '{"a":1.',
      '{"a":"\\u00',
    ]) {
      const problem = problemOf(text);
      expect(problem.class, text).toBe("truncated");
      expect(problem.message).toContain("truncated");
    }
  });

  it("refuses concatenated documents", () => {
    const problem = problemOf('{"a":1}{"a":2}');
    expect(problem).toMatchObject({ class: "trailing_content", position: 7 });
    expect(problem.message).toContain("exactly one JSON object");
    expect(problemOf('{"a":1} x').class).toBe("trailing_content");
  });

  it("refuses a top-level value that is not an object", () => {
    for (const text of ["[1,2]", '"text"', "42", "null", "true"]) {
      expect(problemOf(text).class, text).toBe("not_object");
    }
  });

  it("refuses duplicate keys, naming the key and where", () => {
    const problem = problemOf('{"plan": {"id": "P-1", "id": "P-2"}}');
    expect(problem).toMatchObject({ class: "duplicate_key", path: "$.plan.id" });
    expect(problem.message).toContain('"id" appears more than once in $.plan');
    // Keys equal after unescaping are duplicates too.
    expect(problemOf('{"a":1,"\\u0061":2}').class).toBe("duplicate_key");
    // The same key in sibling objects is fine.
    expect(parseIJsonObject('{"x":{"a":1},"y":{"a":2}}').ok).toBe(true);
  });

  it("refuses U+0000 in a string or a property name, naming where", () => {
    expect(problemOf('{"plan":{"note":"a\\u0000b"}}')).toMatchObject({
      class: "nul_character",
      path: "$.plan.note",
      message: expect.stringMatching(/^the string at \$\.plan\.note contains U\+0000/),
    });
    expect(problemOf('{"items":["ok","\\u0000"]}')).toMatchObject({
      class: "nul_character",
      path: "$.items[1]",
    });
    expect(problemOf('{"a":{"k\\u0000":1}}')).toMatchObject({
      class: "nul_character",
      path: "$.a",
      message: expect.stringMatching(/^a property name in \$\.a contains U\+0000/),
    });
    // A raw NUL is an unescaped control character: malformed, as before.
    expect(problemOf('{"a":"\u0000"}').class).toBe("malformed");
  });

  it("refuses lone surrogates, escaped or raw", () => {
    expect(problemOf('{"a":"\\ud800"}').class).toBe("lone_surrogate");
    expect(problemOf('{"a":"\\udc00x"}').class).toBe("lone_surrogate");
    expect(problemOf('{"\\ud800":1}').class).toBe("lone_surrogate");
    expect(problemOf('{"a":"\ud800"}').class).toBe("lone_surrogate");
    expect(parseIJsonObject('{"a":"\\ud83d\\ude00"}').ok).toBe(true);
  });

  it("refuses integers beyond 2^53 but keeps doubles", () => {
    const problem = problemOf('{"id": 9007199254740993}');
    expect(problem).toMatchObject({ class: "unsafe_integer", path: "$.id" });
    expect(problem.message).toContain("as a string");
    expect(problemOf('{"id": -9007199254740992}').class).toBe("unsafe_integer");
    expect(problemOf('{"x": 1e400}').class).toBe("unsafe_integer");
    expect(parseIJsonObject('{"x": 9007199254740991, "y": 1.5e300}').ok).toBe(true);
  });

  it("refuses nesting deeper than the limit without exhausting the stack", () => {
    const deep = `{"a":${"[".repeat(MAX_DEPTH + 5)}${"]".repeat(MAX_DEPTH + 5)}}`;
    expect(problemOf(deep).class).toBe("too_deep");
    expect(problemOf(`{"a":${"[".repeat(100_000)}`).class).toBe("too_deep");
  });

  it("keeps a member named __proto__ as data", () => {
    const result = parseIJsonObject('{"__proto__": {"admin": true}}');
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(Object.keys(result.value)).toEqual(["__proto__"]);
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
    }
  });
});

describe("schema validation of tool arguments", () => {
  const schema = {
    type: "object",
    properties: {
      planId: { type: "string", pattern: "^P-[0-9]+$" },
      version: { type: "integer", minimum: 1 },
      mode: { enum: ["shift", "swap"] },
      start: { type: "string", format: "date" },
    },
    required: ["planId", "version"],
    additionalProperties: false,
  };

  it("accepts matching arguments", () => {
    expect(checkArguments('{"planId":"P-7","version":3,"start":"2026-12-01"}', schema).ok).toBe(true);
  });

  it("lists every problem with a JSONPath", () => {
    const result = checkArguments('{"planId":"X","extra":1,"mode":"move","start":"tomorrow"}', schema);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problem.class).toBe("schema");
    expect(result.problem.message).toContain('$: missing required property "version"');
    expect(result.problem.message).toContain('$: unknown property "extra" is not allowed');
    expect(result.problem.message).toContain('$.planId: must match pattern "^P-[0-9]+$"');
    expect(result.problem.message).toContain('$.mode: must be one of "shift", "swap"');
    expect(result.problem.message).toContain('$.start: must match format "date"');
  });

  it("treats empty arguments as {} only when nothing is required", () => {
    expect(checkArguments("", { type: "object", properties: {} })).toMatchObject({
      ok: true,
      canonical: "{}",
    });
    const refused = checkArguments("", schema);
    expect(refused).toMatchObject({ ok: false, problem: { class: "empty" } });
  });

  it("reports an unusable schema as such, not as the model's fault", () => {
    const result = validateArguments(
      { type: "object", properties: { a: { type: "no-such-type" } } },
      { a: 1 },
    );
    expect(result).toMatchObject({ ok: false, problem: { class: "invalid_schema" } });
  });
});
