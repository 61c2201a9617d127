/**
 * One word for each thing. A phase, condition type or reason — of the four kinds, of a tool call, or
 * Kubernetes' own that the operator reads (words.ts) — is spelled as a string only in the vocabulary
 * module of this folder that holds it: every program file under operator/src and agent-image/src (not
 * a test) is parsed with the TypeScript parser, and a string literal, or a template literal without
 * substitutions, equal to a word fails with its file and line unless the file is a module whose WORDS
 * hold that word. Types count too (`phase: "Approved"` is the word spelled again). There is no list of
 * allowed sites: where Kubernetes uses the same spelling (a pod's `Failed`, a Status's `Forbidden`),
 * kubernetes.ts names it.
 *
 * And the reverse: every reason the modules list is written by the program (named through a module's
 * constants somewhere outside this folder), so docs/troubleshooting.md explains no reason nobody writes.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import type { Vocabulary } from "./words.ts";

const ROOT = join(import.meta.dirname, "../../../..");
const HERE = relative(ROOT, import.meta.dirname);
const PROGRAM_DIRS = ["operator/src", "agent-image/src"];

/** The modules of this folder (repo-relative path → exports), read as the program reads them. */
async function modules(): Promise<Map<string, Record<string, unknown>>> {
  const files = readdirSync(import.meta.dirname).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
  const loaded = new Map<string, Record<string, unknown>>();
  for (const file of files) loaded.set(join(HERE, file), await import(join(import.meta.dirname, file)));
  return loaded;
}

/** word → the modules whose WORDS hold it. */
function ownersOf(loaded: Map<string, Record<string, unknown>>): Map<string, Set<string>> {
  const owners = new Map<string, Set<string>>();
  for (const [path, exports] of loaded) {
    for (const word of (exports.WORDS as readonly string[] | undefined) ?? []) {
      owners.set(word, (owners.get(word) ?? new Set()).add(path));
    }
  }
  return owners;
}

/**
 * The program files: the TypeScript under PROGRAM_DIRS that is not a test. A file that imports vitest
 * is test code whatever its name (a test suite split into modules, such as the engines' conformance
 * cases), and may say "Forbidden" when it means the start of a tool result's text.
 */
function programFiles(): string[] {
  return PROGRAM_DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .map((f) => join(dir, f))
      .filter((file) => !/^import .* from "vitest";$/m.test(readFileSync(join(ROOT, file), "utf8"))),
  );
}

/** `file:line: "word"` for each literal of `text` that spells a word `file` does not hold. */
export function misspelledWords(file: string, text: string, owners: Map<string, Set<string>>): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      const holders = owners.get(node.text);
      if (holders && !holders.has(file)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push(`${file}:${line}: "${node.text}" (a word of ${[...holders].join(", ")})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The export names of `loaded` that name words (`SessionReason`: every key maps to itself). */
function nameConstants(loaded: Map<string, Record<string, unknown>>): Set<string> {
  const names = new Set<string>();
  for (const exports of loaded.values()) {
    for (const [name, value] of Object.entries(exports)) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) continue;
      const entries = Object.entries(value);
      if (entries.length > 0 && entries.every(([key, word]) => key === word)) names.add(name);
    }
  }
  return names;
}

/** The words program files outside this folder name through `constants` (`SessionReason.PodStarting`). */
function namedWords(constants: Set<string>): Set<string> {
  const named = new Set<string>();
  for (const file of programFiles().filter((f) => !f.startsWith(`${HERE}/`))) {
    const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest);
    const visit = (node: ts.Node): void => {
      if (
        ts.isPropertyAccessExpression(node) &&
        ts.isIdentifier(node.expression) &&
        constants.has(node.expression.text)
      ) {
        named.add(node.name.text);
      }
      // const { Ready, Healthy } = ProviderInstanceCondition;
      if (
        ts.isVariableDeclaration(node) &&
        ts.isObjectBindingPattern(node.name) &&
        node.initializer &&
        ts.isIdentifier(node.initializer) &&
        constants.has(node.initializer.text)
      ) {
        for (const element of node.name.elements) {
          const key = element.propertyName ?? element.name;
          if (ts.isIdentifier(key)) named.add(key.text);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return named;
}

describe("the words of status/ (one word for each thing)", async () => {
  const loaded = await modules();
  const owners = ownersOf(loaded);
  const vocabularies = [...loaded.values()].flatMap((exports) =>
    Object.values(exports).filter(
      (value): value is Vocabulary =>
        typeof value === "object" && value !== null && "kind" in value && "reasons" in value,
    ),
  );

  it("finds the words (every kind, the tool call and Kubernetes')", () => {
    expect(vocabularies.map((v) => v.kind).sort()).toEqual(
      ["AgentSession", "Approval", "Capability", "ProviderInstance", "tool call"].sort(),
    );
    for (const word of ["AwaitingApproval", "Decided", "Executed", "PodStarting", "Stale", "Forbidden"]) {
      expect(owners.has(word), word).toBe(true);
    }
  });

  it("are spelled in no program file but the module that holds them", () => {
    const found = programFiles().flatMap((file) =>
      misspelledWords(file, readFileSync(join(ROOT, file), "utf8"), owners),
    );
    expect(found, `name these with their module's constants:\n${found.join("\n")}`).toEqual([]);
  });

  it("the check names the file and line of a word spelled elsewhere, in a value or a type", () => {
    const text = [
      'const phase = "Pending";',
      'type Done = "Succeeded" | "Failed";',
      "const reason = `Executed`;",
      'const fine = "pending approval";',
      // Composed text is no word spelled out (a composed reason is a type error where reasons are typed).
      "const composed = `Session$" + "{phase}`;",
    ].join("\n");
    expect(misspelledWords("operator/src/x.ts", text, owners)).toEqual([
      expect.stringMatching(/^operator\/src\/x\.ts:1: "Pending" \(a word of .*agentsession\.ts/),
      expect.stringMatching(/^operator\/src\/x\.ts:2: "Succeeded"/),
      expect.stringMatching(/^operator\/src\/x\.ts:2: "Failed"/),
      expect.stringMatching(/^operator\/src\/x\.ts:3: "Executed" \(a word of .*approval\.ts\)/),
    ]);
    // In the module that holds it, a word is its definition.
    expect(misspelledWords(join(HERE, "kubernetes.ts"), 'const p = "Running";', owners)).toEqual([]);
    expect(misspelledWords(join(HERE, "capability.ts"), 'const p = "Running";', owners)).toHaveLength(1);
  });

  it("lists no reason the program never writes", () => {
    const named = namedWords(nameConstants(loaded));
    const reasons = vocabularies.flatMap((v) => [...Object.keys(v.reasons), ...Object.keys(v.events)]);
    const rules = Object.keys((loaded.get(join(HERE, "tool-call.ts"))?.REPROPOSAL_RULES ?? {}) as object);
    expect([...new Set([...reasons, ...rules])].filter((word) => !named.has(word)).sort()).toEqual([]);
  });

  it("says what each phase, condition and reason means, and where a reason is met", () => {
    for (const v of vocabularies) {
      expect(Object.keys(v.phaseMeanings).sort(), v.kind).toEqual([...v.phases].sort());
      expect(Object.keys(v.conditionMeanings).sort(), v.kind).toEqual([...v.conditions].sort());
      for (const [word, reason] of Object.entries({ ...v.reasons, ...v.events })) {
        expect(reason.where.length, `${v.kind} ${word}`).toBeGreaterThan(0);
        expect(reason.means, `${v.kind} ${word}`).toMatch(/\S.*[.)]$/);
      }
    }
  });
});
