/**
 * The five images checked without a container engine: each Dockerfile is parsed with
 * dockerfile-ast, its stages' files are worked out from the build context (after .dockerignore) and the
 * workspaces `npm ci` installs (test/images/image-files.ts), and the entrypoint is started locally with
 * `--help`. Checked for each: node:24-slim in every stage; a numeric non-root USER and
 * NODE_ENV=production in the last; every COPY source in the context or produced by the stage it is
 * copied from; production dependencies only (`npm ci --omit=dev` of one workspace, no root
 * devDependency loaded at startup, every package loaded at startup declared by a workspace npm
 * installs; a package loaded later by `import()` either installed or named in the Dockerfile as left
 * out); every file the entrypoint loads at startup copied; `--help` exits 0 and names every
 * variable of the process's configuration, with nothing but PATH and HOME in its environment. The
 * operator image's compile cache is filled as its USER, with its entrypoint's node, by a file it holds
 * (what the cache holds: operator/src/cli/compile-cache.test.ts).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_POD_ID } from "../operator/src/controllers/agentsession/pod.ts";
import { IMAGE_BUILD_STEPS, IMAGE_COMMANDS, IMAGE_ENV } from "./cluster/src/node/images.ts";
import { buildContext } from "./images/build-context.ts";
import { readStages } from "./images/dockerfile-stages.ts";
import { imageFiles } from "./images/image-files.ts";
import { readWorkspaces, runtimeImports } from "./images/runtime-imports.ts";

const root = join(import.meta.dirname, "..");

/** Each image: its Dockerfile, the workspace it runs, and variables its `--help` must name. */
const IMAGES = [
  {
    dockerfile: "Dockerfile",
    workspace: "operator",
    variables: ["DATABASE_URL", "GATEWAY_PORT", "MODEL_ENDPOINTS"],
  },
  {
    dockerfile: "agent-image/Dockerfile",
    workspace: "agent-image",
    variables: ["GATEHOUSE_GATEWAY_URL", "GATEHOUSE_TOKEN_FILE", "MODEL_BASE_URL"],
  },
  {
    dockerfile: "provider-images/aps/Dockerfile",
    workspace: "provider-images/aps",
    variables: ["APS_URL", "PORT", "GATEHOUSE_JWKS_URL", "GATEHOUSE_GRANT_AUDIENCE"],
  },
  {
    dockerfile: "provider-images/erp/Dockerfile",
    workspace: "provider-images/erp",
    variables: ["ERP_URL", "PORT", "GATEHOUSE_JWKS_URL", "GATEHOUSE_GRANT_AUDIENCE"],
  },
  {
    dockerfile: "examples/mcp-agent/Dockerfile",
    workspace: "examples/mcp-agent",
    variables: ["GATEHOUSE_GATEWAY_URL", "GATEHOUSE_MCP_URL", "GATEHOUSE_TOKEN_FILE", "OPENAI_BASE_URL"],
  },
];

const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};
const workspaces = readWorkspaces(root);
const context = buildContext(root);

/** Everything a check needs about one image, worked out once. */
function image(dockerfile: string) {
  const stages = readStages(join(root, dockerfile));
  const files = imageFiles(stages, context, workspaces);
  const last = stages.at(-1)!;
  const lastFiles = files.stages.at(-1)!;
  const command = [...(last.entrypoint ?? []), ...(last.cmd ?? [])];
  // node, its flags, then the script.
  const script = command.find((word, i) => i > 0 && !word.startsWith("-")) ?? "";
  return { stages, files, last, lastFiles, command, script, scriptRepoPath: lastFiles.files.get(script) };
}

/** Runs `node <script> --help` from the repo root with only PATH, HOME and the image's ENV. */
function help(script: string, env: Record<string, string>, user?: { uid: number; gid: number }) {
  return spawnSync(process.execPath, [script, "--help"], {
    cwd: root,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", ...env },
    timeout: 60_000,
    ...(user ?? {}),
  });
}

const runsAsRoot = process.getuid?.() === 0;
if (!runsAsRoot) {
  console.log("images: not root, so --help cannot run as the images' USER; it runs as this user only");
}

describe.each(IMAGES)("the image of $dockerfile", ({ dockerfile, workspace, variables }) => {
  const built = image(dockerfile);

  it("builds every stage on node:24-slim", () => {
    expect(built.stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of built.stages) expect(stage.image).toMatch(/^node:24-slim(@sha256:[0-9a-f]{64})?$/);
  });

  it("runs its last stage as a numeric non-root user with NODE_ENV=production", () => {
    expect(built.last.user).toMatch(/^\d+(:\d+)?$/);
    const [uid, gid] = (built.last.user ?? "0").split(":").map(Number);
    expect(uid).toBeGreaterThan(0);
    if (gid !== undefined) expect(gid).toBeGreaterThan(0);
    expect(built.last.env.NODE_ENV).toBe("production");
  });

  it("copies only paths the build context holds or an earlier stage produced", () => {
    expect(built.files.problems).toEqual([]);
  });

  it("installs only the production dependencies of its workspace, with npm ci from the lockfile", () => {
    const installs = [...built.lastFiles.modules.values()];
    expect(installs).toHaveLength(1);
    const install = installs[0]!;
    expect(install.flags).toContain("--omit=dev");
    expect(install.flags).toContain("--include-workspace-root=false");
    expect(install.workspaces[0]?.dir).toBe(workspace);
    const devOnly = install.packages.filter((p) => p in rootManifest.devDependencies);
    expect(devOnly, "devDependencies of the root declared as workspace dependencies").toEqual([]);
    // Nothing runs npm in the image: the last stage only copies.
    expect(built.last.steps.filter((s) => s.kind === "run")).toEqual([]);
    expect(built.command[0]).toBe("node");
  });

  it("holds its entrypoint and every file and package the entrypoint loads at startup", () => {
    expect(built.scriptRepoPath, `${built.script} is not copied into the last stage`).toBeDefined();
    const loaded = runtimeImports(root, built.scriptRepoPath!, workspaces);
    // The last stage mirrors the repo under the build's WORKDIR, so workspace links in node_modules
    // (../../<workspace dir>) and relative imports resolve to the same files as in the repo.
    const [modulesDir, install] = [...built.lastFiles.modules.entries()][0] ?? [];
    expect(modulesDir).toBeDefined();
    const base = posix.dirname(modulesDir!);
    const missing = loaded.files.filter((file) => built.lastFiles.files.get(posix.join(base, file)) !== file);
    expect(missing, "files the entrypoint loads that the image lacks").toEqual([]);
    const installedWorkspaces = install!.workspaces.map((w) => w.name);
    expect(installedWorkspaces).toEqual(expect.arrayContaining(loaded.workspaces));
    const undeclared = loaded.packages.filter((p) => !install!.packages.includes(p));
    expect(undeclared, "packages loaded at startup that no installed workspace declares").toEqual([]);
    const dev = loaded.packages.filter((p) => p in rootManifest.devDependencies);
    expect(dev, "root devDependencies loaded at startup").toEqual([]);
    // A package only loaded by import() may stay out of the image, but only as a written decision.
    const text = readFileSync(join(root, dockerfile), "utf8");
    const unexplained = loaded.lazyPackages.filter(
      (p) => !install!.packages.includes(p) && !text.includes(p),
    );
    expect(
      unexplained,
      "packages loaded later by import(), neither installed nor named in the Dockerfile",
    ).toEqual([]);
  });

  it("prints a usage naming its variables with --help and exits 0 without any configuration", () => {
    expect(built.scriptRepoPath, `${built.script} is not copied into the last stage`).toBeDefined();
    const result = help(built.scriptRepoPath!, built.last.env);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: /);
    for (const name of variables) expect(result.stdout).toMatch(new RegExp(`^ {2}${name} `, "m"));
    expect(result.stdout).not.toContain("undocumented");
  });

  it.skipIf(!runsAsRoot)("starts with --help as the image's non-root USER too", () => {
    expect(built.scriptRepoPath, `${built.script} is not copied into the last stage`).toBeDefined();
    const [uid, gid] = (built.last.user ?? "0").split(":").map(Number);
    const result = help(built.scriptRepoPath!, built.last.env, { uid: uid!, gid: gid ?? uid! });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: /);
  });
});

/** The chart's runAsUser values (the components' pods and containers). */
function chartRunAsUsers(): string[] {
  const deployment = readFileSync(join(root, "charts/gatehouse/templates/deployment.yaml"), "utf8");
  return [...deployment.matchAll(/runAsUser: (\S+)/g)].map((match) => match[1]!);
}

/**
 * The images that carry node's compile cache: the local node's name for each, the script that fills
 * it, and the users its pods run as (the chart's components; the agent pods the controller makes).
 */
const COMPILE_CACHED = [
  {
    dockerfile: "Dockerfile",
    localImage: "gatehouse/operator:0.1.0",
    fill: "operator/src/cli/compile-cache.ts",
    runAs: chartRunAsUsers,
  },
  {
    dockerfile: "agent-image/Dockerfile",
    localImage: "gatehouse/agent:dev",
    fill: "agent-image/src/compile-cache.ts",
    runAs: () => [String(AGENT_POD_ID)],
  },
];

describe.each(COMPILE_CACHED)(
  "the compile cache (NODE_COMPILE_CACHE) of $dockerfile",
  ({ dockerfile, localImage, fill: fillScript, runAs }) => {
    const built = image(dockerfile);
    const build = built.stages.at(-2)!;
    const runs = build.steps.filter((s) => s.kind === "run");
    const fill = runs.find((run) => run.words.at(-1) === `/app/${fillScript}`);
    const dir = built.last.env.NODE_COMPILE_CACHE ?? "";

    it("is filled in the build stage, in a directory made for the last stage's USER, and copied as it is", () => {
      expect(dir).toMatch(/^\//);
      expect(fill, `a RUN of ${fillScript}`).toBeDefined();
      expect(built.files.stages.at(-2)!.files.get(fill!.words.at(-1)!)).toBe(fillScript);
      expect(build.env.NODE_COMPILE_CACHE).toBe(dir);
      const [uid, gid] = (built.last.user ?? "").split(":");
      const made = runs.find((run) => run.words[0] === "install" && run.words.at(-1) === dir);
      expect(made?.words).toEqual(["install", "-d", "-o", uid, "-g", gid ?? uid, dir]);
      expect(runs.indexOf(made!)).toBeLessThan(runs.indexOf(fill!));
      const copied = built.last.steps.find((s) => s.kind === "copy" && s.sources.includes(dir));
      expect(copied).toMatchObject({ from: build.name, dest: dir });
    });

    it("is keyed as the containers run: the USER, the chart's runAsUser, the entrypoint's node, flags and NODE_ENV", () => {
      // node keys the cache by the user and the V8 flags: filled otherwise, no container would find it.
      expect(fill?.user).toBe(built.last.user);
      const uid = (built.last.user ?? "").split(":")[0];
      const users = runAs();
      expect(users.length).toBeGreaterThan(0);
      for (const user of users) expect(user).toBe(uid);
      const entrypointFlags = built.command.slice(1, built.command.indexOf(built.script));
      expect(fill?.words.slice(0, -1)).toEqual([built.command[0], ...entrypointFlags]);
      // The local node runs the image as its ENTRYPOINT does, flags included, and fills its cache as
      // the build does (into the host's cache) before it starts pods.
      const local = (words: readonly string[]) => words.map((word) => word.replace(/^\/app\//, ""));
      expect(IMAGE_COMMANDS[localImage]).toEqual(local(built.command));
      expect(IMAGE_BUILD_STEPS[localImage]).toEqual(local(fill!.words));
      expect(Object.keys(IMAGE_ENV[localImage] ?? {})).toEqual(["NODE_COMPILE_CACHE"]);
      // Modules may load other files under another NODE_ENV.
      expect(build.env.NODE_ENV).toBe(built.last.env.NODE_ENV);
      expect(build.image).toBe(built.last.image);
    });
  },
);

it("gives the local node's images only the compile caches their Dockerfiles carry", () => {
  const local = COMPILE_CACHED.map((cached) => cached.localImage).sort();
  expect(Object.keys(IMAGE_ENV).sort()).toEqual(local);
  expect(Object.keys(IMAGE_BUILD_STEPS).sort()).toEqual(local);
  const carrying = IMAGES.filter(({ dockerfile }) => image(dockerfile).last.env.NODE_COMPILE_CACHE);
  expect(carrying.map(({ dockerfile }) => dockerfile).sort()).toEqual(
    COMPILE_CACHED.map((cached) => cached.dockerfile).sort(),
  );
});

describe("the Codex engine's package (its native binary is about 400 MB unpacked)", () => {
  const installed = (dockerfile: string) =>
    [...image(dockerfile).lastFiles.modules.values()].flatMap((install) => install.packages);

  it("is installed in the agent image, which runs it, and not in the operator image", () => {
    expect(installed("agent-image/Dockerfile")).toContain("@openai/codex");
    expect(installed("Dockerfile")).not.toContain("@openai/codex");
  });
});

describe("the example MCP agent's workspace (examples/mcp-agent)", () => {
  const workspacesOf = (dockerfile: string) =>
    [...image(dockerfile).lastFiles.modules.values()].flatMap((install) =>
      install.workspaces.map((w) => w.dir),
    );

  it("is installed in its own image only, so it adds nothing to the operator's or the agent's", () => {
    expect(workspacesOf("examples/mcp-agent/Dockerfile")).toEqual(["examples/mcp-agent"]);
    for (const dockerfile of ["Dockerfile", "agent-image/Dockerfile"])
      expect(workspacesOf(dockerfile)).not.toContain("examples/mcp-agent");
  });
});
