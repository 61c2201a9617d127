/**
 * The token estimate against o200k_base's counts of typical agent text (counted once with
 * gpt-tokenizer 4.0.0, which is not a dependency): within 0.9 and 1.6 times the real count (hex is the
 * one kind a little under it; the answer's reserve covers that).
 */
import { describe, expect, it } from "vitest";
import { estimateText } from "./estimate.ts";

const COUNTED: Array<[string, string, number]> = [
  [
    "prose",
    "The agent reads the production plan for next week, shifts every order by one day and drafts a new version for approval by the planner.",
    27,
  ],
  [
    "a JSON result",
    '{"result":{"orderId":"ORD-1004","line":2,"start":"2026-12-03T06:00:00Z","qty":40,"status":"planned"}}',
    39,
  ],
  ["a digest", "sha256:9e3779b97f4a7c15f39cc0605cedc8341bbdb2d7a0c9a2e8b1e4f0d3c2a1b0ff", 52],
  ["a UUID", "7f3c2a1e-4b1c-9d2e-85eb-ca6b0c7d9e12", 31],
  ["German", "Der Agent verschiebt den Produktionsplan der nächsten Woche um einen Tag.", 14],
  ["Chinese", "代理将下周的生产计划推迟一天，并提交新版本供计划员批准。", 19],
];

describe("estimateText", () => {
  it.each(COUNTED)("%s: 0.9 to 1.6 times the real count", (_kind, text, real) => {
    const estimate = estimateText(text);
    expect(estimate).toBeGreaterThanOrEqual(0.9 * real);
    expect(estimate).toBeLessThanOrEqual(1.6 * real);
  });

  it("counts nothing for nothing", () => {
    expect(estimateText("")).toBe(0);
  });
});
