import { writeFileSync } from "node:fs";

/**
 * The API server's audit policy: full request and response bodies for `gatehouse.dev` resources (tests
 * read exactly what each identity sent and got) and for SubjectAccessReviews (who the transcripts API
 * asked about, and RBAC's answer), metadata (user, verb, object, response code) for
 * everything else. The RequestReceived stage is omitted so each request logs once when it completes
 * (plus ResponseStarted for watches).
 */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    resources:
      - group: gatehouse.dev
      - group: authorization.k8s.io
        resources: ["subjectaccessreviews"]
  - level: Metadata
`;

/** Writes {@link AUDIT_POLICY} to `path`. */
export function writeAuditPolicy(path: string): void {
  writeFileSync(path, AUDIT_POLICY);
}
