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
import { loadKubeConfig } from "../../kube/client.ts";
import { UsageError } from "./usage.ts";

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

/** Opens a connection. Errors: UsageError for a context the kubeconfig does not have. */
export function connect(flags: ConnectionFlags): Connection {
  const config = loadKubeConfig(flags.kubeconfig, undefined, "kubectl-gatehouse/v1alpha1");
  if (flags.context) {
    if (!config.getContextObject(flags.context)) {
      throw new UsageError(`context "${flags.context}" does not exist in the kubeconfig`);
    }
    config.setCurrentContext(flags.context);
  }
  if (!config.getCurrentCluster()) {
    throw new UsageError("the kubeconfig has no current context (use --context or --kubeconfig)");
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
