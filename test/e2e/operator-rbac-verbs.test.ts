/**
 * The operator's RBAC in the chart equals what the operator used in this run's cluster suite (issue 10
 * §2): every request the operator's ServiceAccount made and the API server authorized is taken from
 * the audit log (`.run/cluster-<N>/audit.log`, test/cluster/README.md "Identities and audit log") as
 * {apiGroup, resource[/subresource], verb, namespace, name}, and compared with the rules `helm
 * template` renders for release `gatehouse` in `gatehouse-system` (the identity the e2e operator runs
 * as) with the e2e environment's model key Secret:
 *
 * - none missing: each request is granted by a rule of the ClusterRole or of a Role in its namespace;
 * - none unused: each (rule, apiGroup, resource, verb, resourceName) of a Role serves a request, and
 *   each of the ClusterRole serves one that no Role grants (else the ClusterRole is broader than needed).
 *
 * A server-side apply that creates its object (patch answered 201) is authorized as `create` too, and
 * the audit log records only the `patch`; it counts as both. Requests allowed by Kubernetes' own
 * ClusterRoles (`system:…`, e.g. discovery) are not the chart's to grant. The cluster sequencer
 * (test/cluster-sequencer.ts) runs this file last; alone, or with part of the suite, it cannot tell
 * unused verbs and says so.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, inject, it } from "vitest";
import { OPERATOR_USERNAME } from "../../operator/src/api/well-known.ts";
import { type Manifest, REPO_ROOT, renderChart, resolveHelm } from "../helm/helm.ts";
import { MODEL_KEY_SECRET } from "./environment.ts";

interface AuditEvent {
  auditID: string;
  verb: string;
  user: { username: string };
  objectRef?: {
    apiGroup?: string;
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
  };
  responseStatus?: { code?: number };
  annotations?: Record<string, string>;
}

/** One authorized request, as RBAC sees it. */
interface Request {
  group: string;
  resource: string;
  verb: string;
  namespace?: string;
  name?: string;
}

/** One grant of a rule: a verb on a resource, cluster-wide (ClusterRole) or in one namespace (Role). */
interface Grant {
  role: string;
  namespace?: string;
  group: string;
  resource: string;
  verb: string;
  name?: string;
}

interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const THIS_FILE = "test/e2e/operator-rbac-verbs.test.ts";
const cluster = inject("cluster");
const runFiles = inject("clusterFiles") ?? [];

/** The operator's authorized resource requests in the audit log (each once, even a watch's two stages). */
function operatorRequests(): Request[] {
  const seen = new Set<string>();
  const requests: Request[] = [];
  for (const line of readFileSync(cluster.auditLogPath, "utf8").split("\n")) {
    if (!line) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ref = event.objectRef;
    if (event.user.username !== OPERATOR_USERNAME || !ref?.resource || seen.has(event.auditID)) continue;
    if (event.annotations?.["authorization.k8s.io/decision"] !== "allow") continue;
    if (/ClusterRole "system:/.test(event.annotations["authorization.k8s.io/reason"] ?? "")) continue;
    seen.add(event.auditID);
    const request: Request = {
      group: ref.apiGroup ?? "",
      resource: ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource,
      verb: event.verb,
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      ...(ref.name ? { name: ref.name } : {}),
    };
    requests.push(request);
    // RBAC does not limit `create` by name: the object does not exist yet.
    if (event.verb === "patch" && event.responseStatus?.code === 201) {
      requests.push({ ...request, verb: "create", name: undefined });
    }
  }
  return requests;
}

/** Every grant of the operator's ClusterRole and Roles in the rendered chart. */
function grantsOf(manifests: Manifest[]): Grant[] {
  const bound = new Set(
    manifests
      .filter((m) => m.kind === "ClusterRoleBinding" || m.kind === "RoleBinding")
      .filter((m) =>
        (m.subjects as Array<{ kind: string; name: string; namespace?: string }>).some(
          (s) => `system:serviceaccount:${s.namespace}:${s.name}` === OPERATOR_USERNAME,
        ),
      )
      .map(
        (m) =>
          `${(m.roleRef as { kind: string }).kind}/${m.metadata.namespace ?? ""}/${(m.roleRef as { name: string }).name}`,
      ),
  );
  const grants: Grant[] = [];
  for (const role of manifests) {
    if (role.kind !== "ClusterRole" && role.kind !== "Role") continue;
    const namespace = role.kind === "Role" ? role.metadata.namespace : undefined;
    if (!bound.has(`${role.kind}/${namespace ?? ""}/${role.metadata.name}`)) continue;
    for (const rule of (role.rules ?? []) as PolicyRule[]) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          for (const verb of rule.verbs) {
            for (const name of rule.resourceNames ?? [undefined]) {
              grants.push({
                role: `${role.kind} ${role.metadata.name}`,
                namespace,
                group,
                resource,
                verb,
                name,
              });
            }
          }
        }
      }
    }
  }
  return grants;
}

function grants(grant: Grant, request: Request): boolean {
  return (
    grant.group === request.group &&
    grant.resource === request.resource &&
    grant.verb === request.verb &&
    (grant.namespace === undefined || grant.namespace === request.namespace) &&
    (grant.name === undefined || grant.name === request.name)
  );
}

const describeRequest = (r: Request) =>
  `${r.verb} ${r.group || "core"}/${r.resource}${r.namespace ? ` in ${r.namespace}` : " (all namespaces)"}${r.name ? ` name ${r.name}` : ""}`;
const describeGrant = (g: Grant) =>
  `${g.role}${g.namespace ? ` (${g.namespace})` : ""}: ${g.verb} ${g.group || "core"}/${g.resource}${g.name ? ` name ${g.name}` : ""}`;

let chartGrants: Grant[] | undefined;
async function chartOperatorGrants(): Promise<Grant[]> {
  await resolveHelm();
  chartGrants ??= grantsOf(
    await renderChart({
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: {
        modelEndpoints: [
          { name: "scripted", baseURL: "http://model.invalid/v1", keySecretRef: MODEL_KEY_SECRET },
        ],
      },
    }),
  );
  return chartGrants;
}

it("grants every request the operator made in this run's suite (none missing)", async (context) => {
  const requests = operatorRequests();
  if (requests.length === 0) {
    const reason = `no suite to compare against: the operator made no request in this run (files run: ${runFiles.join(", ") || THIS_FILE}); run it with the cluster project`;
    console.log(`skipped: ${reason}`);
    context.skip(reason);
  }
  const all = await chartOperatorGrants();
  const missing = [
    ...new Set(requests.filter((r) => !all.some((g) => grants(g, r))).map(describeRequest)),
  ].sort();
  if (missing.length > 0) {
    console.log(`requests the operator made that the chart's rules do not grant:\n  ${missing.join("\n  ")}`);
  }
  expect(missing, "requests the chart's operator rules do not grant").toEqual([]);
});

it("uses every verb the chart grants the operator (none unused, ClusterRole no broader than needed)", async (context) => {
  const e2eFiles = readdirSync(join(REPO_ROOT, "test/e2e"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/e2e/${f}`);
  const notRun = e2eFiles.filter((f) => f !== THIS_FILE && !runFiles.includes(f));
  if (notRun.length > 0) {
    const reason = `no suite to compare against: unused verbs can be told only after the whole e2e suite, and this run left out ${notRun.join(", ")}`;
    console.log(`skipped: ${reason}`);
    context.skip(reason);
  }
  const requests = operatorRequests();
  const all = await chartOperatorGrants();
  const roleGrants = all.filter((g) => g.namespace !== undefined);
  // A ClusterRole grant counts only for requests no Role grants: else a Role would do.
  const serves = (g: Grant, r: Request) =>
    grants(g, r) && (g.namespace !== undefined || !roleGrants.some((narrow) => grants(narrow, r)));
  const unused = all.filter((g) => !requests.some((r) => serves(g, r))).map(describeGrant);
  if (unused.length > 0)
    console.log(`grants the operator never needed in the suite:\n  ${unused.join("\n  ")}`);
  expect(unused, "grants of the chart's operator rules that no request of the suite needed").toEqual([]);
});
