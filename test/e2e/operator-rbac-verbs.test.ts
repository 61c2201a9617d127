/**
 * Each component's RBAC in the chart equals what that component used in this run's cluster suite: every
 * request the gateway's or the controller's ServiceAccount made and the API server authorized is taken
 * from the audit log (`.run/cluster-<N>/audit.log`, test/cluster/README.md "Identities and audit log")
 * as {apiGroup, resource[/subresource], verb, namespace, name}, and compared with the rules `helm
 * template` renders for release `gatehouse` in `gatehouse-system` (the identities the e2e gateway and
 * controller run as) with the e2e environment's model key Secret, the local cluster's identity-binding
 * and watched namespaces (operator/src/api/generate.ts) and the identity-binding namespaces the suite
 * listed as a platform would (a RoleBinding of gatehouse-identity-bindings in a provider namespace):
 *
 * - none missing: each request is granted by a rule bound to that component — its ClusterRole, a Role
 *   in the request's namespace, or a ClusterRole bound by RoleBinding there;
 * - none unused: each (rule, apiGroup, resource, verb, resourceName) of a Role serves a request, each
 *   of a ClusterRole bound by RoleBinding serves one in some namespace it is bound in, and each of a
 *   ClusterRole bound cluster-wide serves one that no narrower grant covers (else it is broader than
 *   needed). The gateway's rules must also be exactly GATEWAY_RULES and the controller's CONTROLLER_RULES
 *   (api/rbac.ts), so a rule moved between the two shows as missing or unused for one of them.
 *
 * A server-side apply that creates its object (patch answered 201) is authorized as `create` too, and
 * the audit log records only the `patch`; it counts as both. Requests allowed by Kubernetes' own
 * ClusterRoles (`system:…`, e.g. discovery) and its Role `extension-apiserver-authentication-reader`
 * (the gateway reads the front proxy's settings) are not the chart's to grant. The cluster sequencer
 * (test/cluster-sequencer.ts) runs this file last; alone, or with part of the suite, it cannot tell
 * unused verbs and says so.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import {
  LOCAL_IDENTITY_BINDING_NAMESPACES,
  LOCAL_WATCH_NAMESPACES,
} from "../../operator/src/api/generate.ts";
import {
  COMPONENT_RULES,
  EXTENSION_AUTHENTICATION_READER_ROLE,
  IDENTITY_BINDINGS_ROLE,
} from "../../operator/src/api/rbac.ts";
import { COMPONENTS, type Component, componentUsername } from "../../operator/src/api/well-known.ts";
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

/**
 * One grant of a rule: a verb on a resource, cluster-wide (ClusterRole by ClusterRoleBinding) or in one
 * namespace (Role, or ClusterRole by RoleBinding: `viaRoleBinding`).
 */
interface Grant {
  role: string;
  namespace?: string;
  viaRoleBinding?: boolean;
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

/** `username`'s authorized resource requests in the audit log (each once, even a watch's two stages). */
function requestsOf(username: string): Request[] {
  const seen = new Set<string>();
  const requests: Request[] = [];
  for (const line of readFileSync(cluster.auditLogPath, "utf8").split("\n")) {
    if (!line) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ref = event.objectRef;
    if (event.user.username !== username || !ref?.resource || seen.has(event.auditID)) continue;
    if (event.annotations?.["authorization.k8s.io/decision"] !== "allow") continue;
    const reason = event.annotations["authorization.k8s.io/reason"] ?? "";
    if (/ClusterRole "system:/.test(reason)) continue;
    // Kubernetes' own Role in kube-system; the chart grants only its binding.
    if (reason.includes(`of Role "${EXTENSION_AUTHENTICATION_READER_ROLE}"`)) continue;
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

/**
 * The namespaces the suite itself listed for identity bindings, as a platform adds a provider namespace
 * to `rbac.identityBindingNamespaces`: those where an administrator created a RoleBinding of
 * ClusterRole gatehouse-identity-bindings (test/e2e/core-agent.ts `coreNamespace`), from the audit log.
 */
function suiteIdentityBindingNamespaces(): string[] {
  const namespaces = new Set<string>();
  for (const line of readFileSync(cluster.auditLogPath, "utf8").split("\n")) {
    if (!line) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ref = event.objectRef;
    if (ref?.resource !== "rolebindings" || ref.name !== IDENTITY_BINDINGS_ROLE || !ref.namespace) continue;
    if (!["create", "patch", "update"].includes(event.verb) || (event.responseStatus?.code ?? 0) >= 300)
      continue;
    if (COMPONENTS.some((c) => componentUsername(c) === event.user.username)) continue;
    namespaces.add(ref.namespace);
  }
  return [...namespaces].sort();
}

interface Binding {
  kind: string;
  metadata: { name: string; namespace?: string };
  roleRef: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}

/** Every grant the rendered chart gives `username`, through each binding that names it. */
function grantsOf(manifests: Manifest[], username: string): Grant[] {
  const bindings = (manifests as unknown as Binding[])
    .filter((m) => m.kind === "ClusterRoleBinding" || m.kind === "RoleBinding")
    .filter((m) =>
      (m.subjects ?? []).some((s) => `system:serviceaccount:${s.namespace}:${s.name}` === username),
    );
  const grants: Grant[] = [];
  for (const binding of bindings) {
    const namespace = binding.kind === "RoleBinding" ? binding.metadata.namespace : undefined;
    const role = manifests.find(
      (m) =>
        m.kind === binding.roleRef.kind &&
        m.metadata.name === binding.roleRef.name &&
        (m.kind === "ClusterRole" || m.metadata.namespace === namespace),
    );
    if (!role) continue;
    for (const rule of (role.rules ?? []) as PolicyRule[]) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          for (const verb of rule.verbs) {
            for (const name of rule.resourceNames ?? [undefined]) {
              grants.push({
                role: `${role.kind} ${role.metadata.name}`,
                namespace,
                viaRoleBinding: role.kind === "ClusterRole" && namespace !== undefined,
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

let rendered: Promise<Manifest[]> | undefined;
/** The chart as the local cluster's deploy/ files grant it (api/generate.ts). */
async function renderedChart(): Promise<Manifest[]> {
  rendered ??= resolveHelm().then(() =>
    renderChart({
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: {
        modelEndpoints: [
          { name: "scripted", baseURL: "http://model.invalid/v1", keySecretRef: MODEL_KEY_SECRET },
        ],
        rbac: {
          identityBindingNamespaces: [
            ...new Set([...LOCAL_IDENTITY_BINDING_NAMESPACES, ...suiteIdentityBindingNamespaces()]),
          ],
        },
        watchNamespaces: [...LOCAL_WATCH_NAMESPACES],
      },
    }),
  );
  return rendered;
}

/** A rule's grants as comparable strings (one per group, resource and verb). */
const ruleKeys = (rules: readonly PolicyRule[]) =>
  rules
    .flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${g}/${res}`))),
    )
    .sort();

describe.each(COMPONENTS)("the %s's RBAC", (component: Component) => {
  const username = componentUsername(component);

  it("renders as its ClusterRole exactly the component's rules of api/rbac.ts", async () => {
    const manifests = await renderedChart();
    const own = manifests.find(
      (m) => m.kind === "ClusterRole" && m.metadata.name === `gatehouse-${component}`,
    );
    expect(ruleKeys((own?.rules ?? []) as PolicyRule[])).toEqual(ruleKeys(COMPONENT_RULES[component]));
  });

  it(`grants every request the ${component} made in this run's suite (none missing)`, async (context) => {
    const requests = requestsOf(username);
    if (requests.length === 0) {
      const reason = `no suite to compare against: the ${component} made no request in this run (files run: ${runFiles.join(", ") || THIS_FILE}); run it with the cluster project`;
      console.log(`skipped: ${reason}`);
      context.skip(reason);
    }
    const all = grantsOf(await renderedChart(), username);
    const missing = [
      ...new Set(requests.filter((r) => !all.some((g) => grants(g, r))).map(describeRequest)),
    ].sort();
    if (missing.length > 0) {
      console.log(
        `requests the ${component} made that the chart's rules do not grant:\n  ${missing.join("\n  ")}`,
      );
    }
    expect(missing, `requests the chart's ${component} rules do not grant`).toEqual([]);
  });

  it(`uses every verb the chart grants the ${component} (none unused, ClusterRole no broader than needed)`, async (context) => {
    const e2eFiles = readdirSync(join(REPO_ROOT, "test/e2e"))
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => `test/e2e/${f}`);
    const notRun = e2eFiles.filter((f) => f !== THIS_FILE && !runFiles.includes(f));
    if (notRun.length > 0) {
      const reason = `no suite to compare against: unused verbs can be told only after the whole e2e suite, and this run left out ${notRun.join(", ")}`;
      console.log(`skipped: ${reason}`);
      context.skip(reason);
    }
    const requests = requestsOf(username);
    const all = grantsOf(await renderedChart(), username);
    const narrowGrants = all.filter((g) => g.namespace !== undefined);
    // A cluster-wide grant counts only for requests no narrower grant covers: else a Role would do.
    const serves = (g: Grant, r: Request) =>
      grants(g, r) && (g.namespace !== undefined || !narrowGrants.some((narrow) => grants(narrow, r)));
    // A ClusterRole bound by RoleBinding in several namespaces is one rule: used when used in any of
    // them (which namespaces hold providers or sessions is the platform's list, not the rule's).
    const key = (g: Grant) =>
      g.viaRoleBinding ? `${g.role}: ${g.verb} ${g.group || "core"}/${g.resource}` : describeGrant(g);
    const used = new Set(all.filter((g) => requests.some((r) => serves(g, r))).map(key));
    const unused = [...new Set(all.map(key))].filter((k) => !used.has(k));
    if (unused.length > 0)
      console.log(`grants the ${component} never needed in the suite:\n  ${unused.join("\n  ")}`);
    expect(unused, `grants of the chart's ${component} rules that no request of the suite needed`).toEqual(
      [],
    );
  });
});
