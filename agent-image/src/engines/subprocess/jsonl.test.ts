import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { jsonLine, LineSplitter, readLines } from "./jsonl.ts";

describe("LineSplitter", () => {
  it("keeps U+2028 and U+2029 inside a JSON string instead of splitting there", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    // Raw separators, as JSON.stringify leaves them.
    const record = JSON.stringify({ text: "a\u2028b\u2029c" });
    expect(record).toContain("\u2028");
    splitter.push(`${record}\n${JSON.stringify({ n: 2 })}\n`);
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toEqual({ text: "a\u2028b\u2029c" });
  });

  it("joins records split across chunks, also inside a multi-byte character, and drops a trailing CR", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    const bytes = Buffer.from(`{"t":"é\u2028"}\r\n{"t":2}`, "utf8");
    for (const byte of bytes) splitter.push(Buffer.from([byte]));
    expect(lines).toEqual([`{"t":"é\u2028"}`]);
    splitter.end();
    expect(lines).toEqual([`{"t":"é\u2028"}`, `{"t":2}`]);
  });

  it("reads a stream to its end", async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    readLines(stream, (line) => lines.push(line));
    stream.write(jsonLine({ a: "x\u2029y" }));
    stream.end("tail");
    await new Promise((resolve) => stream.on("end", resolve));
    expect(lines).toEqual([JSON.stringify({ a: "x\u2029y" }), "tail"]);
  });
});
