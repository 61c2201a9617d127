import { describe, expect, it } from "vitest";
import { parseQuantity } from "./quantity.ts";

describe("parseQuantity", () => {
  it.each([
    ["2", 2],
    ["500m", 0.5],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["128Mi", 128 * 2 ** 20],
    ["1k", 1000],
    ["1e3", 1000],
    ["250u", 0.00025],
    [".5", 0.5],
  ])("reads %s as %d base units", (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 9);
  });

  it.each(["", "1.5Gb", "Mi", "1 Gi", "abc"])("rejects %j", (text) => {
    expect(() => parseQuantity(text)).toThrow(/not a resource quantity/);
  });
});
