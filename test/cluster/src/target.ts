/**
 * Which cluster the `cluster` test project runs against, chosen by
 * `GATEHOUSE_E2E_TARGET`:
 *
 * - `local` (default): the local control plane and local node of this folder, started by global-setup.ts;
 * - `kind`: a kind cluster (one `kindest/node` container) created by the kind CLI built from its Go
 *   module (target-kind.ts), when a container engine answers;
 * - `k3s`: a single-node K3s cluster in a container through `@testcontainers/k3s` (target-k3s.ts),
 *   when a container engine answers;
 * - `kubeconfig`: the cluster of `$KUBECONFIG` (its current context, or `GATEHOUSE_E2E_CONTEXT`).
 *
 * Without a container engine, `kind` and `k3s` skip every test of the project, printing why
 * ({@link containerTargetUnavailable}). On every target but `local` the suite acts as the personas by
 * impersonation: the admin context's credentials plus `as`/`as-groups` (kubeconfig fields that
 * kubectl and client-node send as Impersonate-User / Impersonate-Group), so the admin identity needs the
 * `impersonate` verb on users, groups and serviceaccounts (cluster-admin has it). Only the files in
 * {@link PORTABLE_FILES} run there; the others need what only the local node gives (its image → command
 * map, its bridge address where pods reach host processes, its run directory and API audit log) and are
 * skipped with that reason.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { HarnessError } from "./errors.ts";
import { PERSONAS } from "./users.ts";

/** The targets `GATEHOUSE_E2E_TARGET` names. */
export const TARGET_NAMES = ["local", "kind", "k3s", "kubeconfig"] as const;
export type TargetName = (typeof TARGET_NAMES)[number];

/** The parsed choice: what global-setup.ts starts or connects to. */
export type TargetChoice =
  | { name: "local" }
  | { name: "kind"; nodeImage: string; loadImages: string[] }
  | { name: "k3s"; image: string }
  | { name: "kubeconfig"; kubeconfigPath: string; context?: string };

/**
 * The node image of the `kind` target: the `kindest/node` image kind v0.33.0 (test/kind/go) was
 * released with for Kubernetes 1.34, the minor the local control plane builds (test/cluster/go/kubernetes),
 * pinned by digest as kind's release notes ask. Overridable with `GATEHOUSE_KIND_IMAGE`.
 */
export const DEFAULT_KIND_NODE_IMAGE =
  "kindest/node:v1.34.11@sha256:44e222ee2132dab25ff87301682f89eb82c7880ea3a1bf543bfe9708fd08d67d";

/** The node image of the `k3s` target: K3s of Kubernetes 1.34, overridable with `GATEHOUSE_K3S_IMAGE`. */
export const DEFAULT_K3S_IMAGE = "rancher/k3s:v1.34.1-k3s1";

/**
 * Parses the target variables of `env`: `GATEHOUSE_E2E_TARGET` (default `local`); for `kind`
 * `GATEHOUSE_KIND_IMAGE` and `GATEHOUSE_E2E_IMAGES` (images to load into the node, separated by commas
 * or white space); for `k3s` `GATEHOUSE_K3S_IMAGE`; for `kubeconfig` `KUBECONFIG` (required; the first
 * file of a `:`-separated list) and `GATEHOUSE_E2E_CONTEXT`. Throws an `invalid_arguments`
 * HarnessError naming the variable and the values it takes.
 */
export function chooseTarget(env: Record<string, string | undefined>): TargetChoice {
  const raw = env.GATEHOUSE_E2E_TARGET?.trim() || "local";
  if (!(TARGET_NAMES as readonly string[]).includes(raw)) {
    throw new HarnessError(
      "invalid_arguments",
      `GATEHOUSE_E2E_TARGET=${raw} is not a target; use one of ${TARGET_NAMES.join(", ")} (default local)`,
    );
  }
  const name = raw as TargetName;
  if (name === "local") return { name };
  if (name === "kind") {
    const loadImages = (env.GATEHOUSE_E2E_IMAGES ?? "").split(/[\s,]+/).filter((image) => image !== "");
    return { name, nodeImage: env.GATEHOUSE_KIND_IMAGE?.trim() || DEFAULT_KIND_NODE_IMAGE, loadImages };
  }
  if (name === "k3s") return { name, image: env.GATEHOUSE_K3S_IMAGE?.trim() || DEFAULT_K3S_IMAGE };
  const kubeconfigPath = env.KUBECONFIG?.split(":").find((p) => p.trim() !== "");
  if (!kubeconfigPath) {
    throw new HarnessError(
      "invalid_arguments",
      "GATEHOUSE_E2E_TARGET=kubeconfig needs KUBECONFIG naming the cluster's kubeconfig file",
    );
  }
  const context = env.GATEHOUSE_E2E_CONTEXT?.trim();
  return context ? { name, kubeconfigPath, context } : { name, kubeconfigPath };
}

/** The targets whose cluster runs in containers, so they need a container engine. */
export const CONTAINER_TARGETS: readonly TargetName[] = ["kind", "k3s"];

/**
 * Why `target` cannot be reached, given `engineProblem` (container-cluster.ts
 * `containerEngineProblem()`: undefined when an engine answers, else its error): for a container target
 * without an engine `skipped: no container engine answers (<engineProblem>)`, else undefined (the
 * target runs). Global setup passes it to the runner as the reason every test is skipped.
 */
export function containerTargetUnavailable(
  target: TargetName,
  engineProblem: string | undefined,
): string | undefined {
  if (!CONTAINER_TARGETS.includes(target) || engineProblem === undefined) return undefined;
  return `skipped: no container engine answers (${engineProblem})`;
}

/**
 * Test files (relative to the repo root) that need only an API server and the persona contexts, so
 * they run on every target. Every other file of the project needs the local node.
 */
export const PORTABLE_FILES: readonly string[] = [
  "test/cluster-tests/api.test.ts",
  "test/cluster-tests/approval-admission.test.ts",
  "test/cluster-tests/component-rbac.test.ts",
];

/** Why a non-portable file is skipped on a target other than `local`. */
export const LOCAL_ONLY_REASON =
  "needs the local node (its image map for this repo's images, its bridge address where pods reach the operator, gateway and fake systems running on this host, its run directory and API audit log); on this target it does not run yet";

/**
 * Why the test file `file` (relative to the repo root) is skipped on `target`, or undefined when it
 * runs. `unavailable` is the reason the whole target could not be reached (kind or k3s without an engine).
 */
export function skipReasonFor(target: TargetName, file: string, unavailable?: string): string | undefined {
  if (unavailable) return unavailable;
  if (target === "local" || PORTABLE_FILES.includes(file)) return undefined;
  return `target ${target}: ${file} ${LOCAL_ONLY_REASON}`;
}

/** The identities the components' contexts impersonate (their ServiceAccounts, as the chart creates them). */
export const GATEWAY_SERVICE_ACCOUNT = "system:serviceaccount:gatehouse-system:gatehouse-gateway";
export const CONTROLLER_SERVICE_ACCOUNT = "system:serviceaccount:gatehouse-system:gatehouse-controller";

type KubeconfigEntry<T> = { name: string } & T;
interface KubeconfigFile {
  clusters?: Array<KubeconfigEntry<{ cluster: Record<string, unknown> }>>;
  users?: Array<KubeconfigEntry<{ user: Record<string, unknown> }>>;
  contexts?: Array<KubeconfigEntry<{ context: { cluster: string; user: string; namespace?: string } }>>;
  "current-context"?: string;
}

/** Kubeconfig fields that hold file paths, which are relative to the kubeconfig's own folder. */
const PATH_FIELDS = ["certificate-authority", "client-certificate", "client-key", "tokenFile"];

function absolutePaths(entry: Record<string, unknown>, base: string): Record<string, unknown> {
  const copy = { ...entry };
  for (const field of PATH_FIELDS) {
    const value = copy[field];
    if (typeof value === "string" && value !== "" && !isAbsolute(value)) copy[field] = resolve(base, value);
  }
  return copy;
}

/**
 * A kubeconfig (YAML text) with the contexts the suite uses — `admin`, the personas `alice`, `bob`
 * (group planners), `carol` (group approvers), `gatehouse-gateway` and `gatehouse-controller` — all on
 * the cluster of
 * `context` (default the current context) of the kubeconfig at `sourcePath`. `admin` is that
 * context's user unchanged; the others are the same credentials impersonating the persona (`as`,
 * `as-groups`; the components as their ServiceAccounts, whose ServiceAccount groups the API
 * server adds itself). `server` replaces the cluster's address when given (a container's mapped
 * port). Relative file paths become absolute, so the result may be written anywhere. Throws
 * `not_found` when the context, its cluster or its user is missing.
 */
export function impersonatingKubeconfig(sourcePath: string, context?: string, server?: string): string {
  const source = parse(readFileSync(sourcePath, "utf8")) as KubeconfigFile;
  const base = dirname(resolve(sourcePath));
  const contextName = context ?? source["current-context"];
  const chosen = source.contexts?.find((c) => c.name === contextName);
  const cluster = chosen && source.clusters?.find((c) => c.name === chosen.context.cluster);
  const user = chosen && source.users?.find((u) => u.name === chosen.context.user);
  if (!chosen || !cluster || !user) {
    throw new HarnessError(
      "not_found",
      `kubeconfig ${sourcePath} has no usable context ${contextName ?? "(no current-context)"} (context, its cluster and its user must exist)`,
    );
  }
  const clusterEntry = absolutePaths(cluster.cluster, base);
  if (server) clusterEntry.server = server;
  const admin = absolutePaths(user.user, base);
  const personas = PERSONAS.filter((p) => p.name !== "admin").map((p) => ({
    name: p.name,
    user: { ...admin, as: p.name, ...(p.groups.length > 0 ? { "as-groups": [...p.groups] } : {}) },
  }));
  const users = [
    { name: "admin", user: admin },
    ...personas,
    { name: "gatehouse-gateway", user: { ...admin, as: GATEWAY_SERVICE_ACCOUNT } },
    { name: "gatehouse-controller", user: { ...admin, as: CONTROLLER_SERVICE_ACCOUNT } },
  ];
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "gatehouse-e2e", cluster: clusterEntry }],
    users,
    contexts: users.map((u) => ({ name: u.name, context: { cluster: "gatehouse-e2e", user: u.name } })),
    "current-context": "admin",
  });
}
