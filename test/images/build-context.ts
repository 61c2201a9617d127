/**
 * The build context Docker sends for the repository root, after `.dockerignore`. Matching follows
 * Docker's rules (moby/patternmatcher, the `.dockerignore` section of the Dockerfile reference):
 * patterns are relative to the context root (a leading `/` is dropped), `*` and `?` stay within a path
 * segment, `**` spans any number of them, a pattern that matches a directory matches everything under
 * it, `!` lets a path back in, and the last matching pattern decides.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, matchesGlob, posix } from "node:path";

/** One `.dockerignore` line. */
interface Pattern {
  glob: string;
  exception: boolean;
}

/** Reads `<root>/.dockerignore` into patterns (none when the file is absent). */
function readPatterns(root: string): Pattern[] {
  const file = join(root, ".dockerignore");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const exception = line.startsWith("!");
      const glob = posix.normalize((exception ? line.slice(1) : line).trim()).replace(/^\/+/, "");
      return { glob, exception };
    });
}

/** `a/b/c` → `["a", "a/b", "a/b/c"]`. */
function selfAndParents(path: string): string[] {
  const parts = path.split("/");
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** The build context of `root`: which repo paths reach the builder. */
export interface BuildContext {
  /** True when `path` (repo-relative, `/`-separated) is left out by `.dockerignore`. */
  ignored(path: string): boolean;
  /**
   * The files a COPY of `source` (repo-relative file or directory) sends, repo-relative and sorted;
   * empty when the source does not exist or everything in it is ignored.
   */
  files(source: string): string[];
  /** True when `source` (repo-relative) is a directory. */
  isDirectory(source: string): boolean;
}

/** Reads `.dockerignore` of `root` and returns its context. */
export function buildContext(root: string): BuildContext {
  const patterns = readPatterns(root);
  const ignored = (path: string): boolean => {
    let excluded = false;
    const candidates = selfAndParents(path);
    for (const pattern of patterns) {
      if (candidates.some((candidate) => matchesGlob(candidate, pattern.glob))) excluded = !pattern.exception;
    }
    return excluded;
  };
  const files = (source: string): string[] => {
    const normal = posix.normalize(source).replace(/^\.\/|\/$/g, "");
    const absolute = join(root, normal);
    if (!existsSync(absolute)) return [];
    if (!statSync(absolute).isDirectory()) return ignored(normal) ? [] : [normal];
    return readdirSync(absolute, { recursive: true, encoding: "utf8" })
      .map((entry) => posix.join(normal, entry.split("\\").join("/")))
      .filter((path) => !statSync(join(root, path)).isDirectory() && !ignored(path))
      .sort();
  };
  const isDirectory = (source: string) => {
    const absolute = join(root, source);
    return existsSync(absolute) && statSync(absolute).isDirectory();
  };
  return { ignored, files, isDirectory };
}
