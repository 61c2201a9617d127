/**
 * Who a person calling the gateway is, and whether Kubernetes RBAC lets them read an AgentSession.
 * Both questions go to the API server **with the caller's own bearer token**: a `SelfSubjectReview`
 * (who am I) and a `SelfSubjectAccessReview` (may I `get` agentsessions/NAME in NS). The API server
 * authenticates the token with its own audiences — so an agent pod's `gatehouse`-audience token is
 * refused — and authorizes the answer for that user. Every authenticated user may create both
 * reviews (ClusterRole `system:basic-user`), so the operator needs no extra RBAC for this; the
 * token is used for these two reviews only and never stored or logged.
 */
import { AuthenticationV1Api, AuthorizationV1Api, KubeConfig } from "@kubernetes/client-node";
import { GROUP } from "../api/kinds.ts";
import { GatehouseError } from "../core/errors.ts";
import { statusCodeOf } from "../kube/client.ts";

/** A person the API server authenticated. */
export interface Person {
  username: string;
  groups: string[];
}

/** Checks people's access by their bearer token. */
export interface PersonAccess {
  /**
   * Who `token` belongs to, and whether that user may `get` AgentSession `name` in `namespace`.
   * Errors: `forbidden` when the API server does not accept the token; client-node errors otherwise.
   */
  review(token: string, namespace: string, name: string): Promise<{ person: Person; mayGet: boolean }>;
}

/** PersonAccess against the API server of `config` (the operator's own kubeconfig; its user is not used). */
export function personAccess(config: KubeConfig): PersonAccess {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  return {
    async review(token, namespace, name) {
      const asCaller = new KubeConfig();
      asCaller.loadFromClusterAndUser(cluster, { name: "gateway-caller", token });
      const self = await asCaller
        .makeApiClient(AuthenticationV1Api)
        .createSelfSubjectReview({
          body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
        })
        .catch((error: unknown) => {
          if (statusCodeOf(error) !== 401) throw error;
          throw new GatehouseError(
            "forbidden",
            "The bearer token is not a Kubernetes credential the API server accepts.",
            { cause: error },
          );
        });
      const user = self.status?.userInfo;
      if (!user?.username)
        throw new GatehouseError("forbidden", "The API server names no user for this token.");
      const person: Person = { username: user.username, groups: user.groups ?? [] };
      const access = await asCaller.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: {
            resourceAttributes: { group: GROUP, resource: "agentsessions", verb: "get", namespace, name },
          },
        },
      });
      return { person, mayGet: access.status?.allowed === true };
    },
  };
}
