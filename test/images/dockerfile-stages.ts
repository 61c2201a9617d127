/**
 * A Dockerfile read into its build stages with `dockerfile-ast` (the parser of the VS Code Docker
 * language server), keeping what the image checks need: each stage's base image, its COPY and RUN
 * steps in order (with the WORKDIR each runs in), and the last USER, ENV, ENTRYPOINT and CMD.
 * Only the instructions this repo's Dockerfiles use are modelled; any other one is an error, so a new
 * instruction cannot slip past the checks unread.
 */
import { readFileSync } from "node:fs";
import { posix } from "node:path";
import {
  Copy,
  DockerfileParser,
  Entrypoint,
  Env,
  From,
  type Instruction,
  JSONInstruction,
  Run,
  Workdir,
} from "dockerfile-ast";

/** A COPY: `sources` as written (context paths, or paths of stage `from`), `dest` absolute. */
export interface CopyStep {
  kind: "copy";
  line: number;
  from?: string;
  sources: string[];
  dest: string;
}

/** A RUN, its shell-form words (exec form is taken word for word), run in `workdir` as `user`. */
export interface RunStep {
  kind: "run";
  line: number;
  words: string[];
  workdir: string;
  /** The USER then, as written; undefined before any USER (the base image's, root). */
  user?: string;
}

/** One build stage. Lines are 1-based. */
export interface Stage {
  /** `FROM … AS name`, if named. */
  name?: string;
  /** The image as written after FROM, e.g. `node:24-slim` or `node:24-slim@sha256:…`. */
  image: string;
  steps: (CopyStep | RunStep)[];
  /** The last WORKDIR (`/` without one). */
  workdir: string;
  /** The last USER, as written (e.g. `65532:65532`). */
  user?: string;
  env: Record<string, string>;
  /** Exec form only; undefined when absent. */
  entrypoint?: string[];
  cmd?: string[];
}

const IGNORED = new Set(["EXPOSE", "LABEL", "ARG"]);

/** The words of an instruction: the JSON strings of exec form, else the arguments. */
function wordsOf(instruction: Instruction): string[] {
  if (instruction instanceof JSONInstruction && instruction.getOpeningBracket()) {
    return instruction.getJSONStrings().map((s) => s.getJSONValue());
  }
  return instruction.getArguments().map((a) => a.getValue());
}

/**
 * Reads `file` into its stages, in order.
 * Errors: throws naming the line of an instruction outside the modelled set, a shell-form
 * ENTRYPOINT/CMD (signals would go to a shell, not to node) or an instruction before the first FROM.
 */
export function readStages(file: string): Stage[] {
  const dockerfile = DockerfileParser.parse(readFileSync(file, "utf8"));
  const stages: Stage[] = [];
  for (const instruction of dockerfile.getInstructions()) {
    const line = instruction.getRange().start.line + 1;
    const keyword = instruction.getKeyword();
    const where = `${file}:${line}`;
    if (instruction instanceof From) {
      const name = instruction.getBuildStage() ?? undefined;
      stages.push({
        image: instruction.getImage() ?? "",
        steps: [],
        workdir: "/",
        env: {},
        ...(name ? { name } : {}),
      });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${where}: ${keyword} before the first FROM`);
    if (instruction instanceof Copy) {
      const words = wordsOf(instruction);
      const dest = words.at(-1) ?? "";
      const from = instruction.getFromFlag()?.getValue() ?? undefined;
      stage.steps.push({
        kind: "copy",
        line,
        sources: words.slice(0, -1),
        dest: posix.resolve(stage.workdir, dest) + (dest.endsWith("/") ? "/" : ""),
        ...(from ? { from } : {}),
      });
    } else if (instruction instanceof Run) {
      stage.steps.push({
        kind: "run",
        line,
        words: wordsOf(instruction),
        workdir: stage.workdir,
        ...(stage.user ? { user: stage.user } : {}),
      });
    } else if (instruction instanceof Workdir) {
      stage.workdir = posix.resolve(stage.workdir, instruction.getPath() ?? "");
    } else if (instruction instanceof Env) {
      for (const property of instruction.getProperties()) {
        stage.env[property.getName()] = property.getUnescapedValue() ?? "";
      }
    } else if (keyword === "USER") {
      stage.user = instruction.getArguments()[0]?.getValue();
    } else if (instruction instanceof Entrypoint || keyword === "CMD") {
      if (!(instruction instanceof JSONInstruction && instruction.getOpeningBracket())) {
        throw new Error(
          `${where}: ${keyword} must use the exec form ["node", "…"], so node gets the signals`,
        );
      }
      if (keyword === "CMD") stage.cmd = wordsOf(instruction);
      else stage.entrypoint = wordsOf(instruction);
    } else if (!IGNORED.has(keyword)) {
      throw new Error(`${where}: ${keyword} is not modelled by test/images (extend dockerfile-stages.ts)`);
    }
  }
  return stages;
}
