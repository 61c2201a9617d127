import { describe, expect, it } from "vitest";
import { END, engineTable, START, withTable } from "./table.ts";

const result = (engine: string, group: string, title: string, status: string) => ({
  ancestorTitles: [`engine ${engine}`, group],
  title,
  status,
});

describe("the engine table", () => {
  it("has a row per case and a column per engine, marking passes, failures and known failures", () => {
    const table = engineTable({
      testResults: [
        {
          assertionResults: [
            result("builtin", "tools", "runs a call", "passed"),
            result("builtin", "tools", "a | b", "failed"),
            result("pi", "tools", "runs a call (known failure: ids are rewritten)", "passed"),
            result("pi", "tools", "a | b", "passed"),
          ],
        },
        {
          assertionResults: [{ ancestorTitles: ["the engine table"], title: "other file", status: "passed" }],
        },
      ],
    });
    expect(table.split("\n")).toEqual([
      "| group | case | builtin | pi |",
      "| --- | --- | --- | --- |",
      "| tools | runs a call | ✓ | known failure |",
      "| tools | a \\| b | ✗ | ✓ |",
      "",
      "Passed: builtin 1 of 2, pi 1 of 2.",
    ]);
  });

  it("orders the columns as the registry does, whichever file's results came first", () => {
    const table = engineTable(
      {
        testResults: [
          { assertionResults: [result("pi", "tools", "runs a call", "passed")] },
          { assertionResults: [result("builtin", "tools", "runs a call", "passed")] },
        ],
      },
      ["builtin", "pi"],
    );
    expect(table.split("\n")[0]).toBe("| group | case | builtin | pi |");
  });

  it("refuses a report without conformance cases", () => {
    expect(() => engineTable({ testResults: [] })).toThrow(/no conformance case/);
  });

  it("replaces only what lies between the markers", () => {
    const page = `# Engines\n\n${START}\nold\n${END}\n\nAfter.\n`;
    expect(withTable(page, "| new |")).toBe(`# Engines\n\n${START}\n\n| new |\n\n${END}\n\nAfter.\n`);
    expect(() => withTable("# no markers", "x")).toThrow(/lacks the markers/);
  });
});
