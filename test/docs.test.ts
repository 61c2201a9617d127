/**
 * The docs say only what the repo holds:
 *
 * - the Where-is table of docs/development.md (the section under `## Where is`, a `| What | Where |`
 *   table) names paths that exist: every backticked word of a Where cell is a repo-relative path
 *   (a trailing `/` for a folder, an optional `:line` suffix, `*` globs against the tracked files);
 * - every fenced shell command of README.md names a make target, a script of the repo or a documented
 *   binary (the rule is on {@link shellCommands} and {@link DOCUMENTED_BINARIES});
 * - no doc names a path of one machine (a home or work directory, `/tmp`).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const read = (file: string): string => readFileSync(join(root, file), "utf8");

function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "");
}

/** The lines of the section under the `## ` heading that starts with `heading`, or undefined. */
function section(markdown: string, heading: string): string[] | undefined {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => line.startsWith(`## ${heading}`));
  if (start < 0) return undefined;
  const end = lines.findIndex((line, index) => index > start && /^##? /.test(line));
  return lines.slice(start + 1, end < 0 ? lines.length : end);
}

function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\||\|$/g, "")
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/** The backticked words of the Where column of the first table in `lines`. */
function wherePaths(lines: string[]): string[] {
  const rows = lines.filter((line) => line.trim().startsWith("|"));
  if (rows.length < 3) return [];
  const header = cells(rows[0] ?? "");
  const column = header.findIndex((cell) => /^where$/i.test(cell));
  if (column < 0) return [];
  return rows
    .slice(2) // header and the |---| separator
    .flatMap((row) => [...(cells(row)[column] ?? "").matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? ""));
}

function globRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()[\]\\]/g, "\\$&")
    .replace(/\*\*\/?/g, "<globstar>")
    .replace(/\*/g, "[^/]*")
    .replace(/<globstar>/g, "(.*/)?");
  return new RegExp(`^${source}$`);
}

function pathExists(path: string, tracked: string[]): boolean {
  const bare = path.replace(/:\d+(-\d+)?$/, "").replace(/#.*$/, "");
  if (bare.includes("*")) return tracked.some((file) => globRegExp(bare.replace(/\/$/, "")).test(file));
  return existsSync(join(root, bare));
}

/**
 * The command lines of the fenced `sh`, `bash`, `shell` and `console` blocks of `markdown`. The rule:
 * a line ending in `\` continues on the next; blank lines and comment lines (`#` first) are skipped;
 * a here-document's body (after `<<WORD` up to `WORD`) is skipped. In a `console` block only lines with
 * a `$ ` prompt are commands (the prompt is dropped), every other line is output. In the other blocks
 * every remaining line is a command.
 */
function shellCommands(markdown: string): string[] {
  const commands: string[] = [];
  let fence: { console: boolean } | undefined;
  let pending = "";
  let hereEnd: string | undefined;
  for (const raw of markdown.split("\n")) {
    const line = raw.trim();
    const opening = /^```(\w+)/.exec(line);
    if (fence === undefined) {
      if (opening && /^(sh|bash|shell|console)$/.test(opening[1] ?? "")) {
        fence = { console: opening[1] === "console" };
      }
      continue;
    }
    if (line.startsWith("```")) {
      fence = undefined;
      pending = "";
      hereEnd = undefined;
      continue;
    }
    if (hereEnd !== undefined) {
      if (line === hereEnd) hereEnd = undefined;
      continue;
    }
    let text = line;
    if (pending === "") {
      if (fence.console) {
        if (!text.startsWith("$ ")) continue;
        text = text.slice(2).trim();
      }
      if (text === "" || text.startsWith("#")) continue;
    }
    if (text.endsWith("\\")) {
      pending += `${text.slice(0, -1).trimEnd()} `;
      continue;
    }
    const command = pending + text;
    pending = "";
    const here = /<<-?\s*['"]?(\w+)['"]?/.exec(command);
    if (here) hereEnd = here[1];
    commands.push(command);
  }
  return commands;
}

/**
 * Binaries a README command may start with besides `make`, the repo's scripts and files: the tools the
 * README's own prerequisites name for using Gatehouse on a cluster (kubectl, helm, a container engine,
 * dagger for the pipeline), Node's (node, npm, npx, from scripts/ensure-node.sh), git, a client for the
 * Postgres of the audit log (psql) and for plain HTTP (curl), and shell builtins. `sudo` is looked
 * through: the word after it is checked instead.
 */
const DOCUMENTED_BINARIES = new Set([
  "kubectl",
  "helm",
  "docker",
  "dagger",
  "node",
  "npm",
  "npx",
  "git",
  "psql",
  "curl",
  "export",
  "cd",
  "alias",
]);

function makeTargets(makefile: string): Set<string> {
  const targets = new Set<string>();
  for (const line of makefile.split("\n")) {
    const match = /^([A-Za-z0-9_./-]+(?:[ \t]+[A-Za-z0-9_./-]+)*)[ \t]*:(?!=)/.exec(line);
    if (!match || line.startsWith(".")) continue;
    for (const target of (match[1] ?? "").split(/\s+/)) targets.add(target);
  }
  return targets;
}

/** Why `command` names nothing the repo documents, or undefined when it does. */
function unknownCommand(command: string, targets: Set<string>): string | undefined {
  // Leading VAR=value assignments set the environment of the command that follows.
  const words = command.split(/\s+/).filter((word) => word !== "");
  while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0] ?? "")) words.shift();
  if (words[0] === "sudo") words.shift();
  const [first, second] = words;
  if (first === undefined) return undefined;
  if (first === "make") {
    const target = words.slice(1).find((word) => !word.startsWith("-") && !word.includes("="));
    if (target === undefined || targets.has(target)) return undefined;
    return `make target "${target}" is not in the Makefile`;
  }
  if (first.includes("/")) {
    return existsSync(join(root, first)) ? undefined : `${first} does not exist in the repo`;
  }
  if (DOCUMENTED_BINARIES.has(first)) return undefined;
  return `"${first}"${second ? ` (before "${second}")` : ""} is neither a make target, a file of the repo nor a documented binary`;
}

/** A path of one machine: an absolute path starting at a home, work or temporary directory. */
const MACHINE_PATH = /(^|[\s(`'"=:])\/(work|root|home|Users|tmp)\//;

function markdownDocs(tracked: string[]): string[] {
  return tracked.filter(
    (file) => file === "README.md" || file === "DESIGN.md" || /^docs\/.+\.md$/.test(file),
  );
}

describe("the docs", () => {
  it("every path in the Where-is table of docs/development.md exists", () => {
    const lines = section(read("docs/development.md"), "Where is");
    expect(lines, "docs/development.md has no `## Where is` section").toBeDefined();
    const paths = wherePaths(lines ?? []);
    expect(
      paths.length,
      "the `## Where is` section has a `| What | Where |` table with paths",
    ).toBeGreaterThan(0);
    const tracked = trackedFiles();
    const missing = paths.filter((path) => !pathExists(path, tracked));
    expect(missing, "paths in the Where-is table that do not exist").toEqual([]);
  });

  it("every fenced shell command in README.md names a make target, a script or a documented binary", () => {
    const commands = shellCommands(read("README.md"));
    expect(commands.length).toBeGreaterThan(0);
    const targets = makeTargets(read("Makefile"));
    const unknown = commands.flatMap((command) => {
      const why = unknownCommand(command, targets);
      return why === undefined ? [] : [`${command}\n    → ${why}`];
    });
    expect(unknown, unknown.join("\n")).toEqual([]);
  });

  it("no doc names a path of one machine", () => {
    const hits = markdownDocs(trackedFiles()).flatMap((file) =>
      read(file)
        .split("\n")
        .flatMap((line, index) => (MACHINE_PATH.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(hits, `use a repo-relative path or a placeholder:\n${hits.join("\n")}`).toEqual([]);
  });
});

describe("the doc checks themselves", () => {
  it("reads commands by the rule of shellCommands", () => {
    const markdown = [
      "```console",
      "$ make test",
      "output line",
      "```",
      "```sh",
      "# a comment",
      "",
      "FOO=1 kubectl get pods \\",
      "  -A",
      "cat <<EOF",
      "anything",
      "EOF",
      "```",
      "```text",
      "not a command",
      "```",
    ].join("\n");
    expect(shellCommands(markdown)).toEqual(["make test", "FOO=1 kubectl get pods -A", "cat <<EOF"]);
  });

  it("judges commands by target, file and allow-list", () => {
    const targets = new Set(["test", "audit"]);
    expect(unknownCommand("make audit DATABASE_URL=x", targets)).toBeUndefined();
    expect(unknownCommand("make nope", targets)).toContain("nope");
    expect(unknownCommand("scripts/ensure-node.sh", targets)).toBeUndefined();
    expect(unknownCommand("scripts/missing.sh", targets)).toContain("does not exist");
    expect(unknownCommand("GATEHOUSE_E2E_TARGET=kind npx vitest", targets)).toBeUndefined();
    expect(unknownCommand("sudo apt-get install x", targets)).toContain("apt-get");
  });

  it("knows a machine's path from a repo's", () => {
    expect(MACHINE_PATH.test("alias kubectl=/root/.cache/x")).toBe(true);
    expect(MACHINE_PATH.test("cd /home/me/gatehouse")).toBe(true);
    expect(MACHINE_PATH.test("falls back to /var/tmp/gatehouse/pgdata")).toBe(false);
    expect(MACHINE_PATH.test("see test/cluster/README.md")).toBe(false);
  });
});
