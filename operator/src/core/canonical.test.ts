import { describe, expect, it } from "vitest";
import { canonicalDigest, canonicalJson, sha256Hex } from "./canonical.ts";

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
