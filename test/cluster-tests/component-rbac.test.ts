/**
 * What each component's RBAC lets it do, asked of the real API server's authorizer (a
 * SubjectAccessReview as admin for the component's ServiceAccount and its groups — what `kubectl auth
 * can-i --as` asks, without a process per question), after installing crds/ and deploy/ as the local
 * cluster's platform engineer would: the privileges the split took from the gateway and from the
 * controller stay gone, and the few each still needs are there. A second set of bindings, rendered by
 * api/rbac.ts componentBindingManifests for ServiceAccounts of a fresh namespace with a non-empty
 * watch list, shows pod writes and pod and EndpointSlice reads confined to the watched namespaces. And
 * admission refuses the gateway what RBAC alone would let through if a platform granted it: status
 * writes and Approval metadata.
 */
import { randomBytes } from "node:crypto";
import { AuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  LOCAL_IDENTITY_BINDING_NAMESPACES,
  LOCAL_MODEL_KEY_SECRET,
} from "../../operator/src/api/generate.ts";
import {
  CHECKPOINTS_CONFIGMAP,
  componentBindingManifests,
  LEADER_LEASE,
} from "../../operator/src/api/rbac.ts";
import {
  AGENT_NETWORK_POLICY,
  APPROVAL_FINALIZER,
  type Component,
  componentUsername,
  GRANT_KEYS_SECRETS,
  GRANT_PUBLIC_KEYS_CONFIGMAP,
  IDENTITY_BINDINGS_CONFIGMAP,
  OPERATOR_NAMESPACE,
  WITNESS_KEY_SECRET,
} from "../../operator/src/api/well-known.ts";
import { loadKubeConfig } from "../../operator/src/kube/runtime/client.ts";
import { eventually } from "../cluster/src/index.ts";
import { type Kubectl, kubectlFor } from "../e2e/kubectl.ts";
import { approvalSpec, expectRefused, installApi, manifest, uniqueName } from "./api-fixtures.ts";

const cluster = inject("cluster");
const kubectl: Kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
const authorization = loadKubeConfig(cluster.kubeconfigPath, "admin").makeApiClient(AuthorizationV1Api);
const suffix = randomBytes(3).toString("hex");
/** A namespace no binding names. */
const UNLISTED = `rbac-unlisted-${suffix}`;
/** The provider namespace the local cluster lists (deploy/namespaced-rbac.yaml). */
const LISTED = LOCAL_IDENTITY_BINDING_NAMESPACES[0];
/** Where the scoped pair of ServiceAccounts lives, the one namespace it watches, and one it does not. */
const SCOPED_HOME = `rbac-scoped-${suffix}`;
const SCOPED_WATCHED = `rbac-watched-${suffix}`;

const GATEWAY = componentUsername("gateway");
const CONTROLLER = componentUsername("controller");

/**
 * Whether ServiceAccount user `user` may do what `kubectl auth can-i <args…>` names: `VERB
 * RESOURCE[.GROUP][/NAME]` with `-n NS`, `-A`/`--all-namespaces` and `--subresource=SUB` (as there, a
 * slash names an object, not a subresource). Asked as a SubjectAccessReview with the groups the API
 * server gives a ServiceAccount's requests.
 */
async function can(user: string, args: string[]): Promise<boolean> {
  const [verb, target, ...flags] = args;
  if (!verb || !target) throw new Error(`can-i needs a verb and a resource: ${args.join(" ")}`);
  const [qualified = "", name] = target.split("/");
  const dot = qualified.indexOf(".");
  const attributes: Record<string, string> = {
    verb,
    resource: dot < 0 ? qualified : qualified.slice(0, dot),
    group: dot < 0 ? "" : qualified.slice(dot + 1),
    ...(name ? { name } : {}),
  };
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!;
    if (flag === "-n") attributes.namespace = flags[++i] ?? "";
    else if (flag.startsWith("--subresource=")) attributes.subresource = flag.slice("--subresource=".length);
    else if (flag !== "-A" && flag !== "--all-namespaces") throw new Error(`can-i: unknown flag ${flag}`);
  }
  const namespace = /^system:serviceaccount:([^:]+):/.exec(user)?.[1];
  if (!namespace) throw new Error(`${user} is not a ServiceAccount`);
  const review = await authorization.createSubjectAccessReview({
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
        resourceAttributes: attributes,
      },
    },
  });
  // Like kubectl, the verdict alone: evaluationError also reports bindings to roles that other tests
  // deleted meanwhile, which decide nothing here.
  return review.status?.allowed === true;
}

/** The scoped bindings: api/rbac.ts's, their cluster-scoped names suffixed so the local ones stay. */
function scopedBindings(): Record<string, unknown>[] {
  return componentBindingManifests({
    namespace: SCOPED_HOME,
    modelKeySecrets: [],
    identityBindingNamespaces: [SCOPED_WATCHED],
    watchNamespaces: [SCOPED_WATCHED],
  }).map((doc) => {
    const metadata = doc.metadata as { name: string };
    return { ...doc, metadata: { ...metadata, name: `${metadata.name}-${suffix}` } };
  });
}

beforeAll(async () => {
  await installApi(kubectl);
  for (const ns of [UNLISTED, SCOPED_HOME, SCOPED_WATCHED]) {
    await kubectl.ok("admin", ["create", "namespace", ns]);
  }
  for (const name of ["gatehouse-gateway", "gatehouse-controller"]) {
    await kubectl.ok("admin", ["create", "serviceaccount", name, "-n", SCOPED_HOME]);
  }
  // Role names are suffixed too: their RoleBindings' roleRefs must follow.
  const docs = scopedBindings().map((doc) => {
    const ref = doc.roleRef as { kind: string; name: string } | undefined;
    return ref?.kind === "Role" ? { ...doc, roleRef: { ...ref, name: `${ref.name}-${suffix}` } } : doc;
  });
  await kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: docs }),
  );
}, 120_000);

afterAll(async () => {
  for (const doc of scopedBindings()) {
    if (doc.kind !== "ClusterRoleBinding") continue;
    await kubectl.run("admin", ["delete", "clusterrolebinding", (doc.metadata as { name: string }).name]);
  }
  for (const ns of [UNLISTED, SCOPED_HOME, SCOPED_WATCHED]) {
    await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
  }
});

const inHome = ["-n", OPERATOR_NAMESPACE];

describe("the gateway's RBAC", () => {
  it.each([
    ["create pods in a session namespace", ["create", "pods", "-n", UNLISTED]],
    ["create pods in any namespace", ["create", "pods", "--all-namespaces"]],
    ["delete pods", ["delete", "pods", "--all-namespaces"]],
    ["exec into pods", ["create", "pods", "--subresource=exec", "--all-namespaces"]],
    ["read pod logs", ["get", "pods", "--subresource=log", "--all-namespaces"]],
    ["list secrets cluster-wide", ["list", "secrets", "--all-namespaces"]],
    ["list secrets in a namespace nobody listed", ["list", "secrets", "-n", UNLISTED]],
    // Identity bindings reach it through the controller's ConfigMap, never from the Secrets.
    ["list secrets in a listed provider namespace", ["list", "secrets", "-n", LISTED]],
    ["watch secrets in a listed provider namespace", ["watch", "secrets", "-n", LISTED]],
    ["list secrets in its own namespace", ["list", "secrets", ...inHome]],
    // A Secret of type kubernetes.io/service-account-token it created would hold the controller's token.
    ["create secrets in its own namespace", ["create", "secrets", ...inHome]],
    [
      "update the identity bindings ConfigMap",
      ["update", `configmaps/${IDENTITY_BINDINGS_CONFIGMAP}`, ...inHome],
    ],
    ["patch agentsessions/status", ["patch", "agentsessions.gatehouse.dev", "--subresource=status", "-A"]],
    ["patch approvals/status", ["patch", "approvals.gatehouse.dev", "--subresource=status", "-A"]],
    ["patch approvals (finalizers)", ["patch", "approvals.gatehouse.dev", "-A"]],
    ["patch agentsessions (finalizers)", ["patch", "agentsessions.gatehouse.dev", "-A"]],
    ["update the checkpoints ConfigMap", ["update", `configmaps/${CHECKPOINTS_CONFIGMAP}`, ...inHome]],
    ["create ConfigMaps", ["create", "configmaps", ...inHome]],
    [
      "update the grant public keys ConfigMap",
      ["update", `configmaps/${GRANT_PUBLIC_KEYS_CONFIGMAP}`, ...inHome],
    ],
    ["get the witness key Secret", ["get", `secrets/${WITNESS_KEY_SECRET}`, ...inHome]],
    ["get the controller's grant-key Secret", ["get", `secrets/${GRANT_KEYS_SECRETS.controller}`, ...inHome]],
    ["get the Lease", ["get", `leases.coordination.k8s.io/${LEADER_LEASE}`, ...inHome]],
    ["update the Lease", ["update", `leases.coordination.k8s.io/${LEADER_LEASE}`, ...inHome]],
    ["create Leases", ["create", "leases.coordination.k8s.io", ...inHome]],
    ["create events", ["create", "events", "-n", UNLISTED]],
    ["create NetworkPolicies", ["create", "networkpolicies.networking.k8s.io", "-n", UNLISTED]],
    ["patch Deployments", ["patch", "deployments.apps", "-n", UNLISTED]],
    ["read the admission policies", ["get", "validatingadmissionpolicies.admissionregistration.k8s.io"]],
    // It serves transcripts; it does not read them on its own behalf.
    [
      "get agentsessiontranscripts",
      ["get", "agentsessiontranscripts.transcripts.gatehouse.dev", "-n", UNLISTED],
    ],
    ["get other ConfigMaps in kube-system", ["get", "configmaps/kube-proxy", "-n", "kube-system"]],
  ])("may not %s", async (_, args) => {
    expect(await can(GATEWAY, args)).toBe(false);
  });

  it.each([
    ["create approvals", ["create", "approvals.gatehouse.dev", "-n", UNLISTED]],
    ["get approvals", ["get", "approvals.gatehouse.dev", "-n", UNLISTED]],
    ["watch AgentSessions", ["watch", "agentsessions.gatehouse.dev", "-A"]],
    ["create tokenreviews", ["create", "tokenreviews.authentication.k8s.io"]],
    // The transcripts API: who the front proxy names may read what (SubjectAccessReview), and the front
    // proxy's CA and header names.
    ["create subjectaccessreviews", ["create", "subjectaccessreviews.authorization.k8s.io"]],
    [
      "get the API server's authentication settings",
      ["get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"],
    ],
    [
      "list EndpointSlices (no watch list: every namespace)",
      ["list", "endpointslices.discovery.k8s.io", "-A"],
    ],
    ["watch pods (no watch list: every namespace)", ["watch", "pods", "-A"]],
    ["get its own grant-key Secret", ["get", `secrets/${GRANT_KEYS_SECRETS.gateway}`, ...inHome]],
    ["update its own grant-key Secret", ["update", `secrets/${GRANT_KEYS_SECRETS.gateway}`, ...inHome]],
    ["get the grant public keys ConfigMap", ["get", `configmaps/${GRANT_PUBLIC_KEYS_CONFIGMAP}`, ...inHome]],
    ["get the identity bindings ConfigMap", ["get", `configmaps/${IDENTITY_BINDINGS_CONFIGMAP}`, ...inHome]],
    ["get the model key Secret", ["get", `secrets/${LOCAL_MODEL_KEY_SECRET}`, ...inHome]],
  ])("may %s", async (_, args) => {
    expect(await can(GATEWAY, args)).toBe(true);
  });
});

describe("the controller's RBAC", () => {
  it.each([
    ["create tokenreviews", ["create", "tokenreviews.authentication.k8s.io"]],
    ["create subjectaccessreviews", ["create", "subjectaccessreviews.authorization.k8s.io"]],
    ["get the gateway's grant-key Secret", ["get", `secrets/${GRANT_KEYS_SECRETS.gateway}`, ...inHome]],
    ["get the model key Secret", ["get", `secrets/${LOCAL_MODEL_KEY_SECRET}`, ...inHome]],
    ["list secrets cluster-wide", ["list", "secrets", "--all-namespaces"]],
    ["list secrets in a namespace nobody listed", ["list", "secrets", "-n", UNLISTED]],
    ["get secrets in a namespace nobody listed", ["get", "secrets", "-n", UNLISTED]],
    ["delete NetworkPolicies", ["delete", "networkpolicies.networking.k8s.io", "-n", UNLISTED]],
    // The agent NetworkPolicy alone is watched: no other policy is read; none is replaced (a forced
    // apply restores it).
    ["list NetworkPolicies", ["list", "networkpolicies.networking.k8s.io", "-A"]],
    [
      "update another NetworkPolicy",
      ["update", "networkpolicies.networking.k8s.io/prov-aps", "-n", UNLISTED],
    ],
    [
      "update the agent NetworkPolicy",
      ["update", `networkpolicies.networking.k8s.io/${AGENT_NETWORK_POLICY}`, "-n", UNLISTED],
    ],
  ])("may not %s", async (_, args) => {
    expect(await can(CONTROLLER, args)).toBe(false);
  });

  it.each([
    ["patch approvals/status", ["patch", "approvals.gatehouse.dev", "--subresource=status", "-n", UNLISTED]],
    ["patch agentsessions (finalizers)", ["patch", "agentsessions.gatehouse.dev", "-n", UNLISTED]],
    ["create approvals", ["create", "approvals.gatehouse.dev", "-n", UNLISTED]],
    ["create pods (no watch list: every namespace)", ["create", "pods", "-n", UNLISTED]],
    ["apply NetworkPolicies (patch)", ["patch", "networkpolicies.networking.k8s.io", "-n", UNLISTED]],
    [
      "watch the agent NetworkPolicy everywhere",
      ["watch", `networkpolicies.networking.k8s.io/${AGENT_NETWORK_POLICY}`, "-A"],
    ],
    ["update the Lease", ["update", `leases.coordination.k8s.io/${LEADER_LEASE}`, ...inHome]],
    ["update the checkpoints ConfigMap", ["update", `configmaps/${CHECKPOINTS_CONFIGMAP}`, ...inHome]],
    [
      "update the grant public keys ConfigMap",
      ["update", `configmaps/${GRANT_PUBLIC_KEYS_CONFIGMAP}`, ...inHome],
    ],
    ["get the witness key Secret", ["get", `secrets/${WITNESS_KEY_SECRET}`, ...inHome]],
    ["get its own grant-key Secret", ["get", `secrets/${GRANT_KEYS_SECRETS.controller}`, ...inHome]],
    ["list secrets in a listed provider namespace", ["list", "secrets", "-n", LISTED]],
    ["watch secrets in a listed provider namespace", ["watch", "secrets", "-n", LISTED]],
    [
      "update the identity bindings ConfigMap",
      ["update", `configmaps/${IDENTITY_BINDINGS_CONFIGMAP}`, ...inHome],
    ],
  ])("may %s", async (_, args) => {
    expect(await can(CONTROLLER, args)).toBe(true);
  });
});

describe("the components' bindings with a watch list (componentBindingManifests)", () => {
  const scoped = (c: Component) => `system:serviceaccount:${SCOPED_HOME}:gatehouse-${c}`;

  it("let the controller create and delete pods in the watched namespace only", async () => {
    expect(await can(scoped("controller"), ["create", "pods", "-n", SCOPED_WATCHED])).toBe(true);
    expect(await can(scoped("controller"), ["delete", "pods", "-n", SCOPED_WATCHED])).toBe(true);
    expect(await can(scoped("controller"), ["create", "pods", "-n", UNLISTED])).toBe(false);
    expect(await can(scoped("controller"), ["create", "pods", "-n", SCOPED_HOME])).toBe(false);
  });

  it("let both read pods and EndpointSlices in the watched namespace only, never cluster-wide", async () => {
    for (const c of ["gateway", "controller"] as const) {
      for (const resource of ["pods", "endpointslices.discovery.k8s.io"]) {
        for (const verb of ["list", "watch"]) {
          const what = `${c}: ${verb} ${resource}`;
          expect(await can(scoped(c), [verb, resource, "-n", SCOPED_WATCHED]), what).toBe(true);
          expect(await can(scoped(c), [verb, resource, "-n", UNLISTED]), what).toBe(false);
          expect(await can(scoped(c), [verb, resource, "-n", SCOPED_HOME]), what).toBe(false);
          expect(await can(scoped(c), [verb, resource, "-A"]), what).toBe(false);
        }
      }
    }
  });

  it("let the controller list and watch identity-binding Secrets in the listed namespace only", async () => {
    for (const verb of ["list", "watch"]) {
      expect(await can(scoped("controller"), [verb, "secrets", "-n", SCOPED_WATCHED]), verb).toBe(true);
      expect(await can(scoped("controller"), [verb, "secrets", "-n", UNLISTED]), verb).toBe(false);
    }
  });

  it("let the gateway read no Secret but its own, and only read the bindings the controller publishes", async () => {
    for (const ns of [SCOPED_WATCHED, UNLISTED, SCOPED_HOME]) {
      for (const verb of ["list", "watch"]) {
        expect(await can(scoped("gateway"), [verb, "secrets", "-n", ns]), `${verb} in ${ns}`).toBe(false);
      }
    }
    expect(await can(scoped("gateway"), ["list", "secrets", "-A"])).toBe(false);
    expect(await can(scoped("gateway"), ["get", "secrets", "-n", SCOPED_WATCHED])).toBe(false);
    expect(await can(scoped("gateway"), ["create", "pods", "-n", SCOPED_WATCHED])).toBe(false);
    const bindings = `configmaps/${IDENTITY_BINDINGS_CONFIGMAP}`;
    expect(await can(scoped("gateway"), ["get", bindings, "-n", SCOPED_HOME])).toBe(true);
    for (const verb of ["update", "patch", "delete"]) {
      expect(await can(scoped("gateway"), [verb, bindings, "-n", SCOPED_HOME]), verb).toBe(false);
    }
    expect(await can(scoped("controller"), ["update", bindings, "-n", SCOPED_HOME])).toBe(true);
  });

  it("give each its own grant-key Secret in its namespace and not the other's", async () => {
    const get = (name: string) => ["get", `secrets/${name}`, "-n", SCOPED_HOME];
    expect(await can(scoped("gateway"), get(GRANT_KEYS_SECRETS.gateway))).toBe(true);
    expect(await can(scoped("gateway"), get(GRANT_KEYS_SECRETS.controller))).toBe(false);
    expect(await can(scoped("controller"), get(GRANT_KEYS_SECRETS.controller))).toBe(true);
    expect(await can(scoped("controller"), get(GRANT_KEYS_SECRETS.gateway))).toBe(false);
  });
});

describe("admission, as the gateway", () => {
  let ns: string;
  let approval: string;
  beforeAll(async () => {
    ns = `rbac-admission-${suffix}`;
    await kubectl.ok("admin", ["create", "namespace", ns]);
    approval = uniqueName("apr");
    // The gateway creates Approvals (RBAC and admission both let it).
    await kubectl.ok(
      "admin",
      ["create", "-f", "-", "--as", GATEWAY],
      manifest("Approval", ns, approval, approvalSpec()),
    );
    // As if a platform had granted the gateway more than the chart does: admission must still refuse.
    const grant = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "too-much", namespace: ns },
      rules: [
        {
          apiGroups: ["gatehouse.dev"],
          resources: ["approvals", "approvals/status"],
          verbs: ["get", "patch"],
        },
      ],
    };
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "too-much", namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "too-much" },
      subjects: [{ kind: "ServiceAccount", name: "gatehouse-gateway", namespace: OPERATOR_NAMESPACE }],
    };
    await kubectl.ok(
      "admin",
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [grant, binding] }),
    );
    // RBAC's authorizer learns of the binding from its informer: wait until it grants.
    await eventually("the gateway's extra RoleBinding to take effect", 10_000, async () =>
      (await can(GATEWAY, ["patch", "approvals.gatehouse.dev", "-n", ns])) ? true : undefined,
    );
  }, 60_000);

  afterAll(async () => {
    await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
  });

  it("refuses a status write of an Approval by the gateway, naming the rule and the gateway", async () => {
    const result = await kubectl.run("admin", [
      "patch",
      "approval",
      approval,
      "-n",
      ns,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { phase: "Approved" } }),
      "--as",
      GATEWAY,
    ]);
    expectRefused(
      result,
      new RegExp(
        `status-writer: the status of Approval ${approval} is written only by the Gatehouse controller; ${GATEWAY} may not`,
      ),
    );
  });

  it("refuses the gateway the controller's finalizer of an Approval", async () => {
    const result = await kubectl.run("admin", [
      "patch",
      "approval",
      approval,
      "-n",
      ns,
      "--type=json",
      "-p",
      JSON.stringify([{ op: "add", path: "/metadata/finalizers", value: [APPROVAL_FINALIZER] }]),
      "--as",
      GATEWAY,
    ]);
    expectRefused(
      result,
      new RegExp(`approval-finalizers: ${GATEWAY} may not add or remove finalizers of Approval ${approval}`),
    );
  });

  it.each([
    [
      "with a decision",
      { decisions: [{ approver: "carol", verdict: "Approve" }] },
      /created without decisions/,
    ],
    [
      "with a resolution",
      { resolutions: [{ resolver: "carol", outcome: "Succeeded", reason: "checked" }] },
      /created without resolutions/,
    ],
  ])(
    "refuses the gateway an Approval created %s, naming the rule and the gateway",
    async (_, fields, why) => {
      const name = uniqueName("apr");
      const result = await kubectl.run(
        "admin",
        ["create", "-f", "-", "--as", GATEWAY],
        manifest("Approval", ns, name, approvalSpec(fields)),
      );
      expectRefused(result, new RegExp(`approval-create: Approval ${name} is ${why.source}`));
      expect(result.stderr).toContain(GATEWAY);
      const got = await kubectl.run("admin", ["get", "approval", name, "-n", ns]);
      expect(got.stderr).toMatch(/NotFound/);
    },
  );

  it("refuses an Approval created by a user who is neither component", async () => {
    const result = await kubectl.run(
      "admin",
      ["create", "-f", "-"],
      manifest("Approval", ns, uniqueName("squat"), approvalSpec()),
    );
    expectRefused(
      result,
      /approval-create: only the Gatehouse gateway and controller create Approvals; admin may not/,
    );
  });
});
