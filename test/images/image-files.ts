/**
 * What each stage of a Dockerfile holds, worked out without a container engine: COPY from the build
 * context (after `.dockerignore`) and from earlier stages follows Docker's rules (a directory's
 * contents go into the destination; a file goes to `dest/` + its name when `dest` ends in `/`, else to
 * `dest`; `--from` sources are absolute in that stage), and `RUN npm ci --workspace W` creates
 * `node_modules` with a link per workspace npm installs (W and the workspaces it depends on) and the
 * packages their package.json `dependencies` name; `RUN install -d` makes a directory and `RUN node
 * <file>` needs the file in the stage. Every problem found is collected, not thrown, so one
 * run reports all of them.
 */
import { posix } from "node:path";
import type { BuildContext } from "./build-context.ts";
import type { CopyStep, RunStep, Stage } from "./dockerfile-stages.ts";
import type { Workspace } from "./runtime-imports.ts";

/** An `npm ci` a RUN performed. */
export interface NpmInstall {
  line: number;
  /** Where it ran; node_modules is `${workdir}/node_modules`. */
  workdir: string;
  /** The flags as written, e.g. `--omit=dev`. */
  flags: string[];
  /** The workspace named by `--workspace`, and every workspace it installs (itself first). */
  workspaces: Workspace[];
  /** Packages npm installs for those workspaces: their `dependencies` that are not workspaces. */
  packages: string[];
}

/**
 * One stage's files: image path → repo path, the node_modules trees it holds (by image path), and the
 * directories a RUN made whose contents a later RUN writes (a compile cache), not followed file by file.
 */
export interface StageFiles {
  files: Map<string, string>;
  modules: Map<string, NpmInstall>;
  dirs: Set<string>;
}

/** The stages' files and the problems met while working them out (empty when all is well). */
export interface ImageFiles {
  stages: StageFiles[];
  problems: string[];
}

/**
 * True when `path` is a file of `stage`, a directory holding one, inside a node_modules tree, or a
 * directory a RUN made.
 */
export function existsIn(stage: StageFiles, path: string): boolean {
  if (stage.files.has(path) || stage.dirs.has(path)) return true;
  for (const file of stage.files.keys()) if (file.startsWith(`${path}/`)) return true;
  for (const dir of stage.modules.keys()) if (path === dir || path.startsWith(`${dir}/`)) return true;
  return false;
}

/** `--workspace X`, `--workspace=X`, `-w X` → X. */
function workspaceFlag(words: string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? "";
    if (word.startsWith("--workspace=")) return word.slice("--workspace=".length);
    if (word === "--workspace" || word === "-w") return words[i + 1];
  }
  return undefined;
}

/** `start` and, transitively, the workspaces its `dependencies` name: what npm installs for it. */
function workspaceClosure(start: Workspace, all: Workspace[]): Workspace[] {
  const byName = new Map(all.map((w) => [w.name, w]));
  const seen = new Map<string, Workspace>();
  const queue = [start];
  for (let w = queue.shift(); w; w = queue.shift()) {
    if (seen.has(w.name)) continue;
    seen.set(w.name, w);
    for (const dependency of Object.keys(w.manifest.dependencies ?? {})) {
      const target = byName.get(dependency);
      if (target) queue.push(target);
    }
  }
  return [...seen.values()];
}

/**
 * Works out every stage's files: `context` answers for the build context, `workspaces` are the root
 * package.json's workspaces (what `npm ci --workspace` can name).
 */
export function imageFiles(stages: Stage[], context: BuildContext, workspaces: Workspace[]): ImageFiles {
  const problems: string[] = [];
  const done: StageFiles[] = [];
  for (const stage of stages) {
    const current: StageFiles = { files: new Map(), modules: new Map(), dirs: new Set() };
    for (const step of stage.steps) {
      if (step.kind === "copy") copy(step, current, stages, done, context, problems);
      else run(step, current, workspaces, problems);
    }
    done.push(current);
  }
  return { stages: done, problems };
}

function copy(
  step: CopyStep,
  into: StageFiles,
  stages: Stage[],
  done: StageFiles[],
  context: BuildContext,
  problems: string[],
): void {
  const toDirectory = step.dest.endsWith("/") || step.sources.length > 1;
  const dest = step.dest.replace(/\/+$/, "") || "/";
  const target = (sourceRoot: string, file: string, sourceIsDirectory: boolean): string => {
    if (sourceIsDirectory) return posix.join(dest, posix.relative(sourceRoot, file));
    return toDirectory ? posix.join(dest, posix.basename(file)) : dest;
  };
  if (step.from === undefined) {
    for (const source of step.sources) {
      const files = context.files(source);
      if (files.length === 0) {
        problems.push(
          `line ${step.line}: COPY ${source}: not in the build context (missing, or left out by .dockerignore)`,
        );
      }
      const isDirectory = context.isDirectory(source);
      for (const file of files) into.files.set(target(posix.normalize(source), file, isDirectory), file);
    }
    return;
  }
  const index = stages.findIndex(
    (s, i) => (s.name === step.from || String(i) === step.from) && i < done.length,
  );
  const from = done[index];
  if (!from) {
    problems.push(`line ${step.line}: COPY --from=${step.from}: no earlier stage of that name`);
    return;
  }
  for (const raw of step.sources) {
    const source = posix.resolve("/", raw);
    if (!existsIn(from, source)) {
      problems.push(
        `line ${step.line}: COPY --from=${step.from} ${raw}: stage ${step.from} does not produce it`,
      );
      continue;
    }
    for (const [path, repoPath] of from.files) {
      if (path === source) into.files.set(target(source, path, false), repoPath);
      else if (path.startsWith(`${source}/`)) into.files.set(target(source, path, true), repoPath);
    }
    for (const dir of from.dirs) {
      if (dir === source || dir.startsWith(`${source}/`)) into.dirs.add(target(source, dir, true));
    }
    for (const [dir, install] of from.modules) {
      if (dir === source || dir.startsWith(`${source}/`))
        into.modules.set(target(source, dir, true), install);
      else if (source.startsWith(`${dir}/`)) {
        problems.push(
          `line ${step.line}: COPY --from=${step.from} ${raw}: copies part of a node_modules tree`,
        );
      }
    }
  }
}

/**
 * A RUN: `npm ci`; `install -d <dir>` (a directory a later RUN writes into); `node <file>` (writes only
 * into such a directory, as the compile cache), whose file the stage must hold.
 */
function run(step: RunStep, into: StageFiles, workspaces: Workspace[], problems: string[]): void {
  const [program, command] = step.words;
  if (program === "npm" && command === "ci") {
    npmCi(step, into, workspaces, problems);
    return;
  }
  if (program === "install" && command === "-d") {
    into.dirs.add(posix.resolve(step.workdir, step.words.at(-1)!));
    return;
  }
  if (program === "node" && step.words.length >= 2) {
    const script = posix.resolve(step.workdir, step.words.at(-1)!);
    if (!into.files.has(script))
      problems.push(`line ${step.line}: RUN node ${script}: the stage does not hold it`);
    return;
  }
  problems.push(
    `line ${step.line}: RUN ${step.words.join(" ")}: only \`npm ci\`, \`install -d\` and \`node <file>\` are modelled`,
  );
}

function npmCi(step: RunStep, into: StageFiles, workspaces: Workspace[], problems: string[]): void {
  const [, , ...flags] = step.words;
  const at = (path: string) => posix.join(step.workdir, path);
  for (const manifest of ["package.json", "package-lock.json"]) {
    if (into.files.get(at(manifest)) !== manifest) {
      problems.push(
        `line ${step.line}: npm ci needs the root ${manifest} at ${at(manifest)}, copied before it`,
      );
    }
  }
  const named = workspaceFlag(flags);
  const start = workspaces.find((w) => w.dir === named || w.name === named);
  if (!start) {
    problems.push(
      `line ${step.line}: npm ci must name one workspace with --workspace (got ${named ?? "none"})`,
    );
    return;
  }
  const installed = workspaceClosure(start, workspaces);
  for (const w of installed) {
    const manifest = `${w.dir}/package.json`;
    if (into.files.get(at(manifest)) !== manifest) {
      problems.push(`line ${step.line}: npm ci installs workspace ${w.name}: copy ${manifest} before it`);
    }
  }
  const names = new Set(workspaces.map((w) => w.name));
  const packages = new Set(
    installed.flatMap((w) => Object.keys(w.manifest.dependencies ?? {})).filter((p) => !names.has(p)),
  );
  into.modules.set(at("node_modules"), {
    line: step.line,
    workdir: step.workdir,
    flags,
    workspaces: installed,
    packages: [...packages].sort(),
  });
}
