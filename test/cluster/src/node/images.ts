import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { V1Container } from "@kubernetes/client-node";
import { REPO_ROOT } from "../paths.ts";

/**
 * node's compile cache on this host, shared by the test bed's programs and the local node's images
 * that carry one (keyed by node's version, the user, the V8 flags and each file's path and content,
 * so one directory serves them all).
 */
export const NODE_COMPILE_CACHE = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "gatehouse",
  "node-compile-cache",
);

/**
 * Image → command map of the local node (there is no container runtime: an image names a program of
 * this repo, run with the repo root as working directory). `node` stands for the Node.js running the
 * local node. For these images the container's `command` and then `args` from the pod spec are
 * APPENDED to the mapped command as extra arguments (after `$(VAR)` expansion), instead of replacing
 * the image's entrypoint as a container runtime would.
 */
export const IMAGE_COMMANDS: Readonly<Record<string, readonly string[]>> = {
  "gatehouse/agent:dev": ["node", "agent-image/src/main.ts"],
  // The chart's default operator image (charts/gatehouse: image.repository, tag = the chart's appVersion).
  // Its V8 flags are the Dockerfile's ENTRYPOINT's (test/images.test.ts checks).
  "gatehouse/operator:0.1.0": ["node", "--optimize-for-size", "operator/src/main.ts"],
  "gatehouse/provider-aps:dev": ["node", "provider-images/aps/src/main.ts"],
  "gatehouse/provider-erp:dev": ["node", "provider-images/erp/src/main.ts"],
  "gatehouse/echo:dev": ["node", "test/cluster/images/echo.ts"],
  "gatehouse/testbox:dev": ["node", "test/cluster/images/testbox.ts"],
  "gatehouse/provider-fixture:dev": ["node", "test/cluster/images/provider-fixture.ts"],
  // Core's tests: a write provider that counts its effects (ledger on port 8081).
  "gatehouse/provider-counter:dev": ["node", "test/cluster/images/provider-counter.ts"],
  // Runs until stopped, with next to no memory: the benchmark's stand-in for 200 agent pods.
  "gatehouse/sleeper:dev": ["sleep", "infinity"],
  // The MCP endpoint's tests: sleeps, or answers its session over MCP and exits (mcp-agent.ts).
  "gatehouse/mcp-agent:dev": ["node", "test/cluster/images/mcp-agent.ts"],
  // The example agent of spec.engine external (examples/mcp-agent): the image deploy/engines.yaml lists.
  "gatehouse/example-mcp-agent:dev": ["node", "examples/mcp-agent/src/main.ts"],
};

/**
 * The ENV an image's Dockerfile sets for its programs beyond what the pod's spec gives (which wins, as
 * with a container runtime): the images that carry node's compile cache (test/images.test.ts checks
 * them against the Dockerfiles), with the host's cache standing in for the image's.
 */
export const IMAGE_ENV: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "gatehouse/agent:dev": { NODE_COMPILE_CACHE },
  "gatehouse/operator:0.1.0": { NODE_COMPILE_CACHE },
};

/**
 * What those images' builds run beyond copying files: filling the compile cache, with the image's ENV
 * and its ENTRYPOINT's node flags. The local node runs them once when it starts, so its pods start as
 * from the images (an agent pod otherwise compiles the engine's modules each time).
 */
export const IMAGE_BUILD_STEPS: Readonly<Record<string, readonly string[]>> = {
  "gatehouse/agent:dev": ["node", "agent-image/src/compile-cache.ts"],
  "gatehouse/operator:0.1.0": ["node", "--optimize-for-size", "operator/src/cli/compile-cache.ts"],
};

/** Runs {@link IMAGE_BUILD_STEPS} from the repo root; rejects naming the image whose step failed. */
export async function runImageBuildSteps(): Promise<void> {
  await Promise.all(
    Object.entries(IMAGE_BUILD_STEPS).map(
      ([image, [program, ...args]]) =>
        new Promise<void>((resolve, reject) => {
          const env = { PATH: process.env.PATH, ...IMAGE_ENV[image] };
          const binary = program === "node" ? process.execPath : (program ?? "");
          execFile(binary, args, { cwd: REPO_ROOT, env }, (error, stdout, stderr) =>
            error ? reject(new Error(`${image}: ${args.join(" ")} failed: ${stderr}${stdout}`)) : resolve(),
          );
        }),
    ),
  );
}

/**
 * An image registered at run time (the upgrade test's older version): the command of `like` (an image
 * of {@link IMAGE_COMMANDS}), run from `codeDir` (a checkout of another commit) instead of the repo root.
 */
export interface RegisteredImage {
  like: string;
  codeDir: string;
}

/** `<runDir>/images.json`: the images registered with {@link registerImage}, by name. */
function registeredImagesPath(runDir: string): string {
  return join(runDir, "images.json");
}

function registeredImages(runDir: string): Record<string, RegisteredImage> {
  try {
    return JSON.parse(readFileSync(registeredImagesPath(runDir), "utf8")) as Record<string, RegisteredImage>;
  } catch {
    return {};
  }
}

/**
 * Tells the local node of run directory `runDir` that `image` runs `registered.like`'s command from
 * `registered.codeDir` (read at each container start, so no restart of the node). Throws when `like`
 * is not in {@link IMAGE_COMMANDS}.
 */
export function registerImage(runDir: string, image: string, registered: RegisteredImage): void {
  if (!IMAGE_COMMANDS[registered.like]) throw new Error(imageNotInMapMessage(registered.like));
  const images = { ...registeredImages(runDir), [image]: registered };
  writeFileSync(registeredImagesPath(runDir), JSON.stringify(images, null, 2));
}

/**
 * The command, working directory and ENV ({@link IMAGE_ENV}) of `image` on the node of `runDir`;
 * undefined when unknown.
 */
export function resolveImage(
  runDir: string,
  image: string,
): { command: readonly string[]; cwd: string; env: Readonly<Record<string, string>> } | undefined {
  const mapped = IMAGE_COMMANDS[image];
  if (mapped) return { command: mapped, cwd: REPO_ROOT, env: IMAGE_ENV[image] ?? {} };
  const registered = registeredImages(runDir)[image];
  const like = registered && IMAGE_COMMANDS[registered.like];
  return like ? { command: like, cwd: registered.codeDir, env: IMAGE_ENV[registered.like] ?? {} } : undefined;
}

/** The reason a container waits with when its image is not in {@link IMAGE_COMMANDS}. */
export const IMAGE_NOT_IN_MAP = "ImageNotInMap";

/** Message for an image the local node cannot run. */
export function imageNotInMapMessage(image: string): string {
  return `image "${image}" is not in the local node's image map (test/cluster/src/node/images.ts); known images: ${Object.keys(IMAGE_COMMANDS).join(", ")}`;
}

/**
 * The argv to run for `container`: the mapped command (`base`, default the image's in
 * {@link IMAGE_COMMANDS}; `node` replaced by `nodeBinary`) followed by the container's `command` and
 * `args`, each expanded with {@link expandVariables} against `env`. Undefined when the image is not in
 * the map.
 */
export function containerArgv(
  container: Pick<V1Container, "image" | "command" | "args">,
  env: Readonly<Record<string, string>>,
  nodeBinary: string,
  base: readonly string[] | undefined = IMAGE_COMMANDS[container.image ?? ""],
): string[] | undefined {
  if (!base) return undefined;
  const extra = [...(container.command ?? []), ...(container.args ?? [])].map((a) => expandVariables(a, env));
  return [...base.map((part) => (part === "node" ? nodeBinary : part)), ...extra];
}

/**
 * Kubernetes variable expansion: `$(NAME)` becomes the value of NAME when defined (else stays as is),
 * `$$` becomes `$`. Source: k8s.io/kubernetes third_party/forked/golang/expansion.
 */
export function expandVariables(input: string, env: Readonly<Record<string, string>>): string {
  return input.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === "$$") return "$";
    return name !== undefined && Object.hasOwn(env, name) ? (env[name] ?? "") : match;
  });
}
