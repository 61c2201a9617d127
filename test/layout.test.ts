/**
 * DESIGN §3's layout matches the tree: every entry of its layout block under operator/src/ names a file
 * or folder that exists, and every folder of the operator's source (two levels deep) is either an entry
 * of its own or named in its parent entry's description — so a folder added, moved or removed without
 * the layout saying so fails here.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const SOURCE = "operator/src/";

/** One entry of the layout block: its path, and its text (the entry's line and continuation lines). */
type Entry = { path: string; text: string };

/**
 * The entries under operator/src/ of the first fenced block after `## 3.`: an entry line starts with a
 * file or folder name indented by two spaces per level; a line indented to the description column
 * continues the entry above it.
 */
function layoutEntries(design: string): Entry[] {
  const lines = design.split("\n");
  const start = lines.findIndex((line) => line.startsWith("## 3."));
  const open = lines.findIndex((line, index) => index > start && line.startsWith("```"));
  const close = lines.findIndex((line, index) => index > open && line.startsWith("```"));
  const entries: Entry[] = [];
  const parents: string[] = [];
  let inSource = false;
  for (const line of lines.slice(open + 1, close)) {
    if (line.startsWith(SOURCE)) {
      inSource = true;
      parents.splice(0, parents.length, SOURCE);
      continue;
    }
    const match = /^( *)([\w.-]+\/?)(?: {2,}|$)/.exec(line);
    const indent = match?.[1]?.length ?? 0;
    if (match && indent < 20) {
      const name = match[2] ?? "";
      if (indent === 0) inSource = false;
      if (!inSource) continue;
      const level = indent / 2;
      parents.length = level;
      const path = `${parents.join("")}${name}`;
      entries.push({ path, text: line });
      if (name.endsWith("/")) parents.push(name);
    } else if (inSource && entries.length > 0 && line.trim() !== "") {
      const last = entries[entries.length - 1] as Entry;
      last.text += ` ${line.trim()}`;
    } else if (!line.startsWith(" ")) {
      inSource = false;
    }
  }
  return entries;
}

/** The folders of the operator's source, one and two levels below operator/src/, with a trailing `/`. */
function sourceFolders(): string[] {
  const folders: string[] = [];
  const walk = (dir: string, depth: number): void => {
    for (const name of readdirSync(join(root, dir))) {
      const path = `${dir}${name}/`;
      if (!statSync(join(root, dir, name)).isDirectory()) continue;
      folders.push(path);
      if (depth < 2) walk(path, depth + 1);
    }
  };
  walk(SOURCE, 1);
  return folders;
}

describe("DESIGN's layout", () => {
  const entries = layoutEntries(readFileSync(join(root, "DESIGN.md"), "utf8"));

  it("names only files and folders of operator/src/ that exist", () => {
    expect(entries.length).toBeGreaterThan(10);
    const missing = entries.filter((entry) => {
      try {
        return statSync(join(root, entry.path)).isDirectory() !== entry.path.endsWith("/");
      } catch {
        return true;
      }
    });
    expect(missing.map((entry) => entry.path)).toEqual([]);
  });

  it("names every folder of operator/src/, as an entry or in its parent entry's description", () => {
    const paths = new Set(entries.map((entry) => entry.path));
    const unnamed = sourceFolders().filter((folder) => {
      if (paths.has(folder)) return false;
      const name = folder.slice(0, -1).split("/").pop() as string;
      const parent = folder.slice(0, folder.length - name.length - 1);
      const parentEntry = entries.find((entry) => entry.path === parent);
      return !parentEntry || !new RegExp(`\\b${name}\\b`).test(parentEntry.text);
    });
    expect(unnamed, "add them to DESIGN §3's layout block").toEqual([]);
  });
});
