/**
 * docs/troubleshooting.md's table lists every reason the operator writes — condition reasons of the
 * four kinds, and the reasons Core gives when it refuses a tool call or a dispatch (audit records, tool
 * results, the Approval's Executed condition) — none invented, none missing. The reasons are read from
 * the source of operator/src/{controllers,core,kube} with the TypeScript parser: CamelCase string
 * literals in a reason position, i.e.
 * - the value of a `reason:` property (through `?:`, `??`, `||`, and a `const` it names, including a
 *   lookup in a `const` object table such as the Approval phase of an execution state);
 * - an argument passed where a function declared in the same file has a parameter named `reason`
 *   (`ready("Offered", …)`, `fail("PodNameTaken", …)`, `refuse("Stale", "TargetGone", …)`).
 * A condition whose reason comes from anywhere else would escape that, so every condition literal
 * (`{ type, status, reason, … }`) must have its reason in one of those forms or in the short list of
 * forms known to carry reasons collected elsewhere; a new form fails the test until it is taught here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");
const SOURCE_DIRS = ["operator/src/controllers", "operator/src/core", "operator/src/kube"];
const REASON = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Condition reasons that are names of values collected elsewhere, by file and source text: the
 * session's phase reason (the `reason:` literals of phaseFrom, same file), a refusal of executeApproved
 * (the `refuse`/`deferred` reasons of core/execute-approved.ts and the deny reasons of core/policy.ts).
 */
const INDIRECT_REASONS = [
  "operator/src/controllers/agentsession/status.ts: reason",
  "operator/src/controllers/approval/plan-dispatch.ts: result.reason",
];

function sourceFiles(): string[] {
  return SOURCE_DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .map((f) => join(ROOT, dir, f)),
  );
}

interface FileFacts {
  /** const name → initializer (first declaration of that name in the file). */
  consts: Map<string, ts.Expression>;
  /** function name → index of its parameter named `reason`. */
  reasonParams: Map<string, number>;
}

function factsOf(source: ts.SourceFile): FileFacts {
  const consts = new Map<string, ts.Expression>();
  const reasonParams = new Map<string, number>();
  const noteParams = (name: string, params: ts.NodeArray<ts.ParameterDeclaration>) => {
    const index = params.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === "reason");
    if (index >= 0) reasonParams.set(name, index);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      if (!consts.has(node.name.text)) consts.set(node.name.text, node.initializer);
      const init = node.initializer;
      if (ts.isArrowFunction(init) || ts.isFunctionExpression(init))
        noteParams(node.name.text, init.parameters);
    }
    if (ts.isFunctionDeclaration(node) && node.name) noteParams(node.name.text, node.parameters);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { consts, reasonParams };
}

/** The CamelCase literals `expression` can evaluate to, and whether anything in it was not followed. */
function literalsOf(
  expression: ts.Expression,
  facts: FileFacts,
  seen = new Set<string>(),
): { literals: string[]; unresolved: boolean } {
  const e =
    ts.isParenthesizedExpression(expression) || ts.isAwaitExpression(expression)
      ? expression.expression
      : expression;
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) {
    return { literals: REASON.test(e.text) ? [e.text] : [], unresolved: false };
  }
  const merge = (...parts: Array<{ literals: string[]; unresolved: boolean }>) => ({
    literals: parts.flatMap((p) => p.literals),
    unresolved: parts.some((p) => p.unresolved),
  });
  if (ts.isConditionalExpression(e))
    return merge(literalsOf(e.whenTrue, facts, seen), literalsOf(e.whenFalse, facts, seen));
  if (
    ts.isBinaryExpression(e) &&
    (e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken ||
      e.operatorToken.kind === ts.SyntaxKind.BarBarToken)
  ) {
    // The left side is typically a value read at run time (a field), the right the literal fallback.
    const right = literalsOf(e.right, facts, seen);
    const left = literalsOf(e.left, facts, seen);
    return { literals: [...left.literals, ...right.literals], unresolved: right.unresolved };
  }
  if (ts.isIdentifier(e) && !seen.has(e.text)) {
    const init = facts.consts.get(e.text);
    if (init) return literalsOf(init, facts, new Set([...seen, e.text]));
    return { literals: [], unresolved: true };
  }
  if (ts.isElementAccessExpression(e) && ts.isIdentifier(e.expression)) {
    const table = facts.consts.get(e.expression.text);
    if (table && ts.isObjectLiteralExpression(table)) {
      return merge(
        ...table.properties
          .filter(ts.isPropertyAssignment)
          .map((p) => literalsOf(p.initializer, facts, seen)),
      );
    }
  }
  return { literals: [], unresolved: true };
}

interface Extraction {
  reasons: Set<string>;
  /** Condition literals whose reason was not followed, as "file: source text". */
  indirect: string[];
}

function extractReasons(): Extraction {
  const reasons = new Set<string>();
  const indirect: string[] = [];
  const sources = sourceFiles().map(
    (file) =>
      [file, ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)] as const,
  );
  // A function with a `reason` parameter is followed wherever it is called: planners import the
  // helpers that set a phase from a module beside them.
  const reasonParams = new Map<string, number>();
  for (const [, source] of sources)
    for (const [fn, index] of factsOf(source).reasonParams) reasonParams.set(fn, index);
  for (const [file, source] of sources) {
    const facts = factsOf(source);
    const where = relative(ROOT, file);
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === "reason") {
        for (const r of literalsOf(node.initializer, facts).literals) reasons.add(r);
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
        const index = facts.reasonParams.get(node.expression.text) ?? reasonParams.get(node.expression.text);
        const arg = index === undefined ? undefined : node.arguments[index];
        if (arg) for (const r of literalsOf(arg, facts).literals) reasons.add(r);
      }
      if (ts.isObjectLiteralExpression(node)) {
        const props = new Map(
          node.properties
            .filter((p) => ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p))
            .map((p) => [(p.name as ts.Identifier).text, p] as const),
        );
        const reason = props.get("reason");
        if (reason && props.has("type") && props.has("status")) {
          const value = ts.isShorthandPropertyAssignment(reason) ? reason.name : reason.initializer;
          const viaParam =
            ts.isIdentifier(value) &&
            value.text === "reason" &&
            [...facts.reasonParams.keys()].some((fn) => isInsideFunctionNamed(node, fn));
          if (!viaParam && literalsOf(value, facts).unresolved)
            indirect.push(`${where}: ${value.getText(source)}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { reasons, indirect };
}

/** True when `node` sits in the body of the function or arrow bound to `name`. */
function isInsideFunctionNamed(node: ts.Node, name: string): boolean {
  for (let n: ts.Node | undefined = node.parent; n; n = n.parent) {
    if (ts.isFunctionDeclaration(n) && n.name?.text === name) return true;
    if (
      (ts.isArrowFunction(n) || ts.isFunctionExpression(n)) &&
      ts.isVariableDeclaration(n.parent) &&
      ts.isIdentifier(n.parent.name) &&
      n.parent.name.text === name
    ) {
      return true;
    }
  }
  return false;
}

/** The first-column reasons of docs/troubleshooting.md's table (rows like "| `Reason` | … |"). */
function troubleshootingReasons(): string[] {
  const page = readFileSync(join(ROOT, "docs/troubleshooting.md"), "utf8");
  expect(page.startsWith("# Troubleshooting"), "docs/troubleshooting.md is the troubleshooting page").toBe(
    true,
  );
  return [...page.matchAll(/^\| `([A-Za-z0-9]+)` +\|/gm)].map((m) => m[1]!);
}

describe("the troubleshooting table (docs/troubleshooting.md)", () => {
  const { reasons, indirect } = extractReasons();

  it("finds known reasons in the source (the extraction works)", () => {
    for (const known of [
      "PodNameTaken",
      "CapabilityNotFound",
      "NoReadyEndpoints",
      "TargetVersionMoved",
      "TargetGone",
      "Conflict",
      "IdentityUnbound",
      "Succeeded",
      "NotReady",
    ]) {
      expect(reasons, known).toContain(known);
    }
  });

  it("follows every condition's reason to literals, except the known forms collected elsewhere", () => {
    expect([...new Set(indirect)].sort()).toEqual(INDIRECT_REASONS);
  });

  it("lists every reason the operator writes, once", () => {
    const listed = troubleshootingReasons();
    expect(
      listed.filter((r, i) => listed.indexOf(r) !== i),
      "listed twice",
    ).toEqual([]);
    expect(
      [...reasons].filter((r) => !listed.includes(r)).sort(),
      "missing from docs/troubleshooting.md",
    ).toEqual([]);
  });

  it("lists no reason the operator never writes", () => {
    expect(
      troubleshootingReasons().filter((r) => !reasons.has(r)),
      "not in the source",
    ).toEqual([]);
  });
});
