import { describe, expect, it } from "vitest";
import { canonicalDigest, canonicalJson, isCanonicalText, sha256Hex } from "./canonical.ts";

describe("RFC 8785 canonical JSON", () => {
  it("sorts keys by UTF-16 code units (RFC 8785 §3.2.3 example)", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    // Object.keys would list "1" first (integer-like keys), so read the order from the text itself.
    const keys = [...canonicalJson(input).matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) =>
      JSON.parse(`"${m[1]}"`),
    );
    expect(keys).toEqual(["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"]);
  });

  it("writes numbers in ECMAScript form (RFC 8785 Appendix B samples)", () => {
    expect(canonicalJson([1e21, 1e-7, 333333333.3333333, -0, 4.5, 2e-3, 1e23])).toBe(
      "[1e+21,1e-7,333333333.3333333,0,4.5,0.002,1e+23]",
    );
  });

  it("refuses values that are not I-JSON", () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(/canonicalized/);
    expect(() => canonicalJson({ a: "\ud800" })).toThrow(/canonicalized/);
    expect(() => canonicalJson(undefined)).toThrow(/no JSON form/);
    expect(() => canonicalJson({ a: 1n })).toThrow(/canonicalized/);
  });

  it("digests the canonical text", () => {
    expect(canonicalDigest({ b: 1, a: 2 })).toBe(sha256Hex('{"a":2,"b":1}'));
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });
});

describe("isCanonicalText", () => {
  const canonical = [
    '{"a":1,"b":[1,"x",{"c":null,"d":true}],"e":"é😀","f":-1.5e-7}',
    '{"\\r":"Carriage Return","a1":"One","é":"\\"quoted\\""}',
    '[{"a":[]},{},"\\n"]',
  ];
  // Each of these is another text than canonicalJson(JSON.parse(text)), or would make it throw.
  const notCanonical = [
    '{"a": 1}',
    '{"b":1,"a":2}',
    '{"a":1,"a":1}',
    '{"a":1.0}',
    '{"a":1e2}',
    '{"a":-0}',
    '{"a":1e999}',
    '{"a":"\\/"}',
    '{"a":"\\u00e9"}',
    '{"a":"\\ud800"}',
    '{"a":{"d":1,"c":2}}',
  ];

  it("accepts canonical text without re-serializing it", () => {
    for (const text of canonical) {
      expect(canonicalJson(JSON.parse(text)), text).toBe(text);
      expect(isCanonicalText(text, JSON.parse(text)), text).toBe(true);
    }
  });

  it("never accepts text that is not its own canonical form", () => {
    for (const text of notCanonical) expect(isCanonicalText(text, JSON.parse(text)), text).toBe(false);
  });

  it("defers integer-like keys, which JavaScript orders numerically, to the full computation", () => {
    const text = '{"1":"a","10":"b","2":"c"}';
    expect(canonicalJson(JSON.parse(text))).toBe(text);
    expect(isCanonicalText(text, JSON.parse(text))).toBe(false);
  });
});
