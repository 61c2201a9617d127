/**
 * Authorization for what the gateway serves people (the transcripts API): a SubjectAccessReview made
 * with the gateway's own credential for the user the API server's front proxy named — RBAC's answer,
 * as `kubectl auth can-i --as` gives it. The API server's audit log records each review.
 */
import type { KubeClients } from "./runtime/client.ts";

/** Who asks (the proxied user) and what for. */
export interface AccessRequest {
  user: { username: string; uid?: string; groups: string[]; extra: Record<string, string[]> };
  resource: { group: string; resource: string; verb: string; namespace: string; name: string };
}

/** Whether RBAC allows the request. */
export type Authorize = (request: AccessRequest) => Promise<boolean>;

/** {@link Authorize} by SubjectAccessReview. Errors: the API server's (the caller answers 500/503). */
export function subjectAccessReviewer(clients: Pick<KubeClients, "authorization">): Authorize {
  return async ({ user, resource }) => {
    const review = await clients.authorization.createSubjectAccessReview({
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          groups: user.groups,
          extra: user.extra,
          resourceAttributes: resource,
        },
      },
    });
    return review.status?.allowed === true && review.status.denied !== true;
  };
}
