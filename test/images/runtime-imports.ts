/**
 * The modules a `.ts` entrypoint loads when it starts, as Node's type stripping runs it: every static
 * `import`/`export … from` except `import type`/`export type` (erased; `import { type X }` is not, it
 * still loads the module), followed through relative paths and this repo's workspaces (by their
 * package.json `exports`). Packages from node_modules are recorded, not followed: npm installs their own
 * dependencies. `import()` expressions are recorded apart, since a process can start without them.
 */
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative } from "node:path";
import ts from "typescript";

/** What an entrypoint loads at startup; paths are relative to the repo root, names sorted. */
export interface RuntimeImports {
  /** Repo files the entrypoint loads, itself included. */
  files: string[];
  /** Packages (not workspaces, not `node:` builtins) imported statically by those files. */
  packages: string[];
  /** Packages only reached by an `import()` expression. */
  lazyPackages: string[];
  /** Workspaces (package names) the entrypoint loads files of, its own included. */
  workspaces: string[];
}

/** A workspace of the root package.json: its package name, folder (repo-relative) and manifest. */
export interface Workspace {
  name: string;
  dir: string;
  manifest: {
    name: string;
    dependencies?: Record<string, string>;
    exports?: Record<string, string>;
  };
}

/** The root package.json's workspaces, read from disk. */
export function readWorkspaces(root: string): Workspace[] {
  const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    workspaces: string[];
  };
  return rootManifest.workspaces.map((dir) => {
    const manifest = JSON.parse(
      readFileSync(join(root, dir, "package.json"), "utf8"),
    ) as Workspace["manifest"];
    return { name: manifest.name, dir, manifest };
  });
}

/** `lodash/fp` → `lodash`, `@scope/pkg/sub` → `@scope/pkg`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

/** The runtime module specifiers of one source file: static ones and `import()` ones with a literal. */
function specifiersOf(file: string): { static: string[]; lazy: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found = { static: [] as string[], lazy: [] as string[] };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.importClause?.isTypeOnly) found.static.push(node.moduleSpecifier.text);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (!node.isTypeOnly) found.static.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.lazy.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Walks `entry` (repo-relative) and returns what it loads at startup.
 * Errors: throws when a relative import or a workspace export does not exist, naming the importer.
 */
export function runtimeImports(
  root: string,
  entry: string,
  workspaces = readWorkspaces(root),
): RuntimeImports {
  const builtins = new Set(builtinModules);
  const byName = new Map(workspaces.map((w) => [w.name, w]));
  const files = new Set<string>();
  const packages = new Set<string>();
  const lazy = new Set<string>();
  const reached = new Set<string>();
  const workspaceOf = (file: string) =>
    workspaces.filter((w) => file.startsWith(`${w.dir}/`)).sort((a, b) => b.dir.length - a.dir.length)[0];

  const resolve = (specifier: string, importer: string): string | undefined => {
    if (specifier.startsWith(".")) return relative(root, join(root, dirname(importer), specifier));
    const name = packageNameOf(specifier);
    const workspace = byName.get(name);
    if (!workspace) return undefined;
    const subpath = `.${specifier.slice(name.length)}`;
    const target = workspace.manifest.exports?.[subpath];
    if (!target) throw new Error(`${importer}: ${specifier} is not an export of workspace ${workspace.dir}`);
    return join(workspace.dir, target);
  };

  const queue = [entry];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (files.has(file)) continue;
    if (!existsSync(join(root, file))) throw new Error(`${file} does not exist`);
    files.add(file);
    const workspace = workspaceOf(file);
    if (workspace) reached.add(workspace.name);
    const found = specifiersOf(join(root, file));
    for (const specifier of found.static) {
      if (specifier.startsWith("node:") || builtins.has(specifier)) continue;
      const target = resolve(specifier, file);
      if (target) queue.push(target);
      else packages.add(packageNameOf(specifier));
    }
    for (const specifier of found.lazy) {
      if (!specifier.startsWith(".") && !byName.has(packageNameOf(specifier)))
        lazy.add(packageNameOf(specifier));
    }
  }
  const sorted = (set: Set<string>) => [...set].sort();
  return {
    files: sorted(files),
    packages: sorted(packages),
    lazyPackages: sorted(lazy).filter((p) => !packages.has(p)),
    workspaces: sorted(reached),
  };
}
