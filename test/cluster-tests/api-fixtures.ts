/**
 * Fixtures of the API tests: installing crds/ and the components' bindings (deploy/), a namespace with
 * the persona RoleBindings, and valid objects of each kind to start from.
 */
import { createHash, randomBytes } from "node:crypto";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { expect } from "vitest";
import { GROUP, VERSION } from "../../operator/src/api/kinds.ts";
import { loadKubeConfig, makeClients } from "../../operator/src/kube/runtime/client.ts";
import type { Kubectl, KubectlResult } from "../e2e/kubectl.ts";
import { decisionPatch } from "../e2e/story.ts";

export { installApi } from "../e2e/environment.ts";

/**
 * The kubeconfig context of the component that writes status and finalizers and may create Approvals:
 * the controller (its ServiceAccount, deploy/controller-rbac.yaml).
 */
export const OPERATOR = "gatehouse-controller";
/** The gateway's kubeconfig context (deploy/gateway-rbac.yaml). */
export const GATEWAY = "gatehouse-gateway";

/**
 * Sets `status` of the Gatehouse object `plural/name` as the controller writes it: a merge patch of the
 * status subresource through the controller's own credentials, the one verb its role grants there
 * (`kubectl patch` would GET the status first, which it may not). Errors: the API server's refusal.
 */
export async function patchStatusAsOperator(
  kubeconfigPath: string,
  plural: string,
  namespace: string,
  name: string,
  status: Record<string, unknown>,
): Promise<void> {
  const operator = makeClients(loadKubeConfig(kubeconfigPath, OPERATOR));
  await operator.custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace, plural, name, body: { status } },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

/**
 * A fresh namespace where alice and bob are session users and approvers, carol (group `approvers`)
 * is an approver, group `platform` holds the platform persona and group `viewers` the view persona.
 */
export async function personaNamespace(kubectl: Kubectl, prefix: string): Promise<string> {
  const ns = `${prefix}-${randomBytes(3).toString("hex")}`;
  await kubectl.ok("admin", ["create", "namespace", ns]);
  const binding = (name: string, role: string, subjects: Array<{ kind: string; name: string }>) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: subjects.map((s) => ({ apiGroup: "rbac.authorization.k8s.io", ...s })),
  });
  const items = [
    binding("session-users", "gatehouse-session-user", [
      { kind: "User", name: "alice" },
      { kind: "User", name: "bob" },
    ]),
    binding("approvers", "gatehouse-approver", [
      { kind: "User", name: "alice" },
      { kind: "User", name: "bob" },
      { kind: "Group", name: "approvers" },
    ]),
    binding("platform", "gatehouse-platform", [{ kind: "Group", name: "platform" }]),
    binding("viewers", "gatehouse-view", [{ kind: "Group", name: "viewers" }]),
  ];
  await kubectl.ok("admin", ["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  return ns;
}

/** A JSON object with string keys. */
export type Json = Record<string, unknown>;

/** The canonical arguments of the fixtures and their sha256. */
export const ARGUMENTS = '{"planId":"plan-1","version":2}';
export const ARGUMENTS_DIGEST = createHash("sha256").update(ARGUMENTS).digest("hex");

/** A valid Approval spec as the operator writes it; `overrides` replace top-level fields. */
export function approvalSpec(overrides: Json = {}): Json {
  return {
    executionId: randomBytes(32).toString("hex"),
    sessionRef: { name: "push-plan", uid: "0b6c4a52-3f4e-4a53-9a8e-1d2c3b4a5f60" },
    capability: "aps-schedule-publish",
    capabilityId: "aps.schedule.publish",
    providerRef: { name: "aps" },
    arguments: ARGUMENTS,
    argumentsDigest: ARGUMENTS_DIGEST,
    schemaDigest: "sha256:0f1e2d",
    requester: { user: "alice", groups: [] },
    approvers: { users: ["alice"], groups: ["approvers"] },
    requiredApprovals: 1,
    allowSelfApproval: true,
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    decisions: [],
    ...overrides,
  };
}

/** A valid AgentSession spec for `user`. */
export function sessionSpec(user: string, overrides: Json = {}): Json {
  return {
    subject: { user },
    model: { name: "scripted/reference-story" },
    messages: [{ text: "Push next week's production plan back by one day." }],
    ...overrides,
  };
}

/** A valid Capability spec. */
export function capabilitySpec(overrides: Json = {}): Json {
  return { providerRef: { name: "aps" }, id: "aps.schedule.publish", ...overrides };
}

/** A valid ProviderInstance spec. */
export function providerSpec(overrides: Json = {}): Json {
  return { type: "aps", image: "gatehouse/provider-aps:dev", ...overrides };
}

/** An object of `kind` named `name` in `ns` with `spec`, as JSON text for `kubectl create -f -`. */
export function manifest(kind: string, ns: string, name: string, spec: Json): string {
  return JSON.stringify({
    apiVersion: "gatehouse.dev/v1alpha1",
    kind,
    metadata: { name, namespace: ns },
    spec,
  });
}

/** A unique object name. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString("hex")}`;
}

/** Expects `result` to be a refusal whose message matches `message`; returns the message. */
export function expectRefused(result: KubectlResult, message: RegExp): string {
  expect(result.code, `${result.command} should have been refused`).not.toBe(0);
  expect(result.stderr).toMatch(message);
  return result.stderr;
}

/** `user` appends their decision to Approval `name` in `ns` with a JSON patch; throws when refused. */
export async function decide(
  kubectl: Kubectl,
  user: string,
  ns: string,
  name: string,
  verdict: "Approve" | "Reject",
  reason?: string,
): Promise<void> {
  await kubectl.ok(user, [
    "patch",
    "approval",
    name,
    "-n",
    ns,
    "--type",
    "json",
    "-p",
    decisionPatch(user, verdict, reason),
  ]);
}

/** `kubectl patch <kind> <name> -n <ns> --type <type> -p <body> [extra…]` as `user`; never throws. */
export function patchAs(
  kubectl: Kubectl,
  user: string,
  kind: string,
  ns: string,
  name: string,
  type: "json" | "merge",
  body: unknown,
  extra: string[] = [],
): Promise<KubectlResult> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return kubectl.run(user, ["patch", kind, name, "-n", ns, "--type", type, "-p", text, ...extra]);
}
