import type { V1Container } from "@kubernetes/client-node";

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
  "gatehouse/operator:0.1.0": ["node", "operator/src/main.ts"],
  "gatehouse/provider-aps:dev": ["node", "provider-images/aps/src/main.ts"],
  "gatehouse/provider-erp:dev": ["node", "provider-images/erp/src/main.ts"],
  "gatehouse/echo:dev": ["node", "test/cluster/images/echo.ts"],
  "gatehouse/testbox:dev": ["node", "test/cluster/images/testbox.ts"],
  "gatehouse/provider-fixture:dev": ["node", "test/cluster/images/provider-fixture.ts"],
  // Core's tests: a write provider that counts its effects (ledger on port 8081).
  "gatehouse/provider-counter:dev": ["node", "test/cluster/images/provider-counter.ts"],
  // Runs until stopped, with next to no memory: the benchmark's stand-in for 200 agent pods.
  "gatehouse/sleeper:dev": ["sleep", "infinity"],
};

/** The reason a container waits with when its image is not in {@link IMAGE_COMMANDS}. */
export const IMAGE_NOT_IN_MAP = "ImageNotInMap";

/** Message for an image the local node cannot run. */
export function imageNotInMapMessage(image: string): string {
  return `image "${image}" is not in the local node's image map (test/cluster/src/node/images.ts); known images: ${Object.keys(IMAGE_COMMANDS).join(", ")}`;
}

/**
 * The argv to run for `container`: the mapped command (`node` replaced by `nodeBinary`) followed by the
 * container's `command` and `args`, each expanded with {@link expandVariables} against `env`.
 * Undefined when the image is not in the map.
 */
export function containerArgv(
  container: Pick<V1Container, "image" | "command" | "args">,
  env: Readonly<Record<string, string>>,
  nodeBinary: string,
): string[] | undefined {
  const base = IMAGE_COMMANDS[container.image ?? ""];
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
