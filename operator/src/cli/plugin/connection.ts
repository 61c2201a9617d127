/**
 * The plugin's connection to the cluster, as kubectl would make it. kubectl passes none of its own
 * global flags to a plugin (only the environment), so `--kubeconfig`, `--context` and `-n/--namespace`
 * are the plugin's own: the kubeconfig is `--kubeconfig`, else `$KUBECONFIG` (a list, merged), else
 * `~/.kube/config` (client-node's loadFromDefault); the namespace is `-n`, else the context's, else
 * `default`. Who the user is comes from the API server (SelfSubjectReview), never from a flag.
 */
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from "@kubernetes/client-node";
import { GROUP } from "../../api/kinds.ts";
import { loadKubeConfig } from "../../kube/runtime/client.ts";

/** Where to connect: the plugin's global flags. */
export interface ConnectionFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

/** A connection: the kubeconfig, the namespace to work in, and the API clients the plugin uses. */
export interface Connection {
  config: KubeConfig;
  namespace: string;
  custom: CustomObjectsApi;
  authentication: AuthenticationV1Api;
  authorization: AuthorizationV1Api;
}

/** The user the API server authenticated (SelfSubjectReview status.userInfo). */
export interface Me {
  username: string;
  groups: string[];
}

/**
 * A kubeconfig the plugin cannot use: a file that cannot be read or parsed, a `--context` it does not
 * have, or no current context. The message names the flag or variable that chose it and what to do;
 * the plugin prints it (without the usage) and exits 2.
 */
export class KubeconfigError extends Error {
  override readonly name = "KubeconfigError";
}

/** Which flag or variable named the kubeconfig, as a user would write it, and how to choose another. */
function kubeconfigSource(flags: ConnectionFlags, env: NodeJS.ProcessEnv): { source: string; fix: string } {
  if (flags.kubeconfig) {
    return {
      source: "--kubeconfig",
      fix: "pass an existing kubeconfig file, or leave --kubeconfig out to use $KUBECONFIG / ~/.kube/config",
    };
  }
  if (env.KUBECONFIG) {
    return {
      source: "$KUBECONFIG",
      fix: "point $KUBECONFIG at existing kubeconfig files (a ':'-separated list), pass --kubeconfig FILE, or unset it to use ~/.kube/config",
    };
  }
  return { source: "~/.kube/config", fix: "fix that file, or pass --kubeconfig FILE or set $KUBECONFIG" };
}

/** The kubeconfig `flags` and `env` name, loaded as kubectl would. Errors: {@link KubeconfigError}. */
function loadConfig(flags: ConnectionFlags, env: NodeJS.ProcessEnv): KubeConfig {
  try {
    return loadKubeConfig(flags.kubeconfig, undefined, "kubectl-gatehouse/v1alpha1");
  } catch (error) {
    const { source, fix } = kubeconfigSource(flags, env);
    const errno = error as NodeJS.ErrnoException;
    const file = errno.path ?? flags.kubeconfig ?? env.KUBECONFIG ?? "~/.kube/config";
    const unreadable = typeof errno.code === "string" && errno.code.startsWith("E");
    throw new KubeconfigError(
      `kubeconfig ${file} (${source}) ${unreadable ? "cannot be read" : "is not a valid kubeconfig"}: ${errno.message}; ${fix}`,
      { cause: error },
    );
  }
}

/** `a, b, c` of the kubeconfig's context names, or `none`. */
function contextNames(config: KubeConfig): string {
  const names = config.getContexts().map((c) => c.name);
  return names.length > 0 ? names.join(", ") : "none";
}

/**
 * Opens a connection with the kubeconfig `flags` name (else `env.KUBECONFIG`, else ~/.kube/config).
 * Errors: {@link KubeconfigError} for a kubeconfig that cannot be read or parsed, a `--context` it
 * does not have, or no current context.
 */
export function connect(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Connection {
  const config = loadConfig(flags, env);
  const { source } = kubeconfigSource(flags, env);
  if (flags.context) {
    if (!config.getContextObject(flags.context)) {
      throw new KubeconfigError(
        `context "${flags.context}" (--context) is not in the kubeconfig (${source}), whose contexts are: ${contextNames(config)}; pass one of them, or leave --context out to use the current context`,
      );
    }
    config.setCurrentContext(flags.context);
  }
  if (!config.getCurrentCluster()) {
    throw new KubeconfigError(
      `the kubeconfig (${source}) has no current context with a cluster; pass --context NAME (its contexts are: ${contextNames(config)}) or --kubeconfig FILE`,
    );
  }
  const namespace =
    flags.namespace || config.getContextObject(config.getCurrentContext())?.namespace || "default";
  return {
    config,
    namespace,
    custom: config.makeApiClient(CustomObjectsApi),
    authentication: config.makeApiClient(AuthenticationV1Api),
    authorization: config.makeApiClient(AuthorizationV1Api),
  };
}

/** Who the API server says the caller is (`kubectl auth whoami`). Errors: client-node's. */
export async function whoAmI(connection: Connection): Promise<Me> {
  const review = await connection.authentication.createSelfSubjectReview({
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  const user = review.status?.userInfo;
  if (!user?.username) throw new Error("the API server's SelfSubjectReview names no user");
  return { username: user.username, groups: user.groups ?? [] };
}

/** True when RBAC lets the caller `verb` `resource` (gatehouse.dev) `name` in `namespace`. */
export async function mayI(
  connection: Connection,
  verb: string,
  resource: string,
  namespace: string,
  name?: string,
): Promise<boolean> {
  const review = await connection.authorization.createSelfSubjectAccessReview({
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: {
        resourceAttributes: { group: GROUP, resource, verb, namespace, ...(name ? { name } : {}) },
      },
    },
  });
  return review.status?.allowed === true;
}
