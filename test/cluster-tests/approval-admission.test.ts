/**
 * The API server itself enforces the decision rules of an Approval (DESIGN §2): every offending request
 * is sent as the offending user through that user's kubeconfig context, and must be refused with the
 * object unchanged (same resourceVersion). Approvals are created through the controller's identity; no
 * Gatehouse process runs here, so nothing but the requests below touches them.
 */
import { beforeAll, describe, expect, inject, it } from "vitest";
import { DECISION_POLICY } from "../../operator/src/api/admission-approval.ts";
import { APPROVAL } from "../../operator/src/api/kinds.ts";
import { APPROVAL_FINALIZER } from "../../operator/src/api/well-known.ts";
import { decisionRulesEnforced } from "../../operator/src/kube/admission/guard.ts";
import { loadKubeConfig, makeClients } from "../../operator/src/kube/runtime/client.ts";
import { type Kubectl, kubectlFor } from "../e2e/kubectl.ts";
import { decisionPatch, eventually } from "../e2e/story.ts";
import {
  approvalSpec,
  decide,
  expectRefused,
  installApi,
  type Json,
  manifest,
  OPERATOR,
  patchAs,
  patchStatusAsOperator,
  personaNamespace,
  sessionSpec,
  uniqueName,
} from "./api-fixtures.ts";

const cluster = inject("cluster");
const kubectl: Kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
let ns: string;

interface ApprovalObject {
  metadata: {
    name: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { decisions: Array<{ approver: string; verdict: string }>; arguments: string };
  status?: { phase?: string };
}

/** Creates an Approval as the operator and returns its name. */
async function createApproval(overrides: Json = {}): Promise<string> {
  const name = uniqueName("apr");
  await kubectl.ok(OPERATOR, ["create", "-f", "-"], manifest("Approval", ns, name, approvalSpec(overrides)));
  return name;
}

async function read(name: string): Promise<ApprovalObject> {
  return await kubectl.json<ApprovalObject>("admin", ["get", "approval", name, "-n", ns]);
}

function patch(user: string, name: string, type: "json" | "merge", body: unknown, extra: string[] = []) {
  return patchAs(kubectl, user, "approval", ns, name, type, body, extra);
}

/** Runs `request`, expects a refusal matching `message`, and that the Approval did not change. */
async function refusedAndUnchanged(
  name: string,
  request: () => Promise<Awaited<ReturnType<typeof patch>>>,
  message: RegExp,
): Promise<void> {
  const before = await read(name);
  expectRefused(await request(), message);
  expect((await read(name)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
}

beforeAll(async () => {
  await installApi(kubectl);
  ns = await personaNamespace(kubectl, "approvals");
});

describe("Approval updates the API server refuses", () => {
  it("refuses bob's Approve on an Approval that lists only alice and group approvers", async () => {
    const name = await createApproval();
    await refusedAndUnchanged(
      name,
      () => patch("bob", name, "json", decisionPatch("bob", "Approve")),
      /decision-approver: bob is not an approver of Approval .* \(approvers: users \[alice\], groups \[approvers\]\)/,
    );
  });

  it("refuses a decision appended in someone else's name", async () => {
    const name = await createApproval();
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", decisionPatch("carol", "Approve")),
      /decision-own-name: alice may append a decision only in their own name, not as carol/,
    );
  });

  it("refuses a second decision by the same user, naming the decision already recorded", async () => {
    const name = await createApproval({ requiredApprovals: 2 });
    await decide(kubectl, "alice", ns, name, "Approve");
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", decisionPatch("alice", "Approve")),
      new RegExp(
        `decision-once: alice has already decided Approval ${name}: Approve \\(spec\\.decisions\\[0\\]\\); each user decides once`,
      ),
    );
  });

  it("refuses an approval after one's own rejection, naming the rejection and where it is", async () => {
    const name = await createApproval({ requiredApprovals: 3 });
    await decide(kubectl, "alice", ns, name, "Approve");
    await decide(kubectl, "carol", ns, name, "Reject", "press 1 is booked");
    await refusedAndUnchanged(
      name,
      () => patch("carol", name, "json", decisionPatch("carol", "Approve")),
      new RegExp(
        `decision-once: carol has already decided Approval ${name}: Reject \\(spec\\.decisions\\[1\\]\\)`,
      ),
    );
  });

  it("refuses two decisions appended in one patch", async () => {
    const name = await createApproval();
    const two = [
      { op: "add", path: "/spec/decisions/-", value: { approver: "alice", verdict: "Approve" } },
      { op: "add", path: "/spec/decisions/-", value: { approver: "alice", verdict: "Approve" } },
    ];
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", two),
      /decision-append: alice may only append exactly one decision/,
    );
  });

  it("refuses removing a decision", async () => {
    const name = await createApproval({ requiredApprovals: 2 });
    await decide(kubectl, "alice", ns, name, "Approve");
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", [{ op: "remove", path: "/spec/decisions/0" }]),
      /spec\.decisions is append-only/,
    );
  });

  it("refuses reordering decisions", async () => {
    const name = await createApproval({ requiredApprovals: 3 });
    await decide(kubectl, "alice", ns, name, "Approve");
    await decide(kubectl, "carol", ns, name, "Approve");
    const { spec } = await read(name);
    const swapped = [spec.decisions[1], spec.decisions[0], { approver: "bob", verdict: "Approve" }];
    await refusedAndUnchanged(
      name,
      () => patch("bob", name, "merge", { spec: { decisions: swapped } }),
      /spec\.decisions is append-only/,
    );
  });

  it.each([
    ["arguments", { arguments: '{"planId":"plan-1","version":3}' }, /spec\.arguments is immutable/],
    ["requiredApprovals", { requiredApprovals: 2 }, /spec\.requiredApprovals is immutable/],
  ])("refuses a merge patch that approves and also changes %s", async (_field, change, message) => {
    const name = await createApproval();
    const body = { spec: { decisions: [{ approver: "alice", verdict: "Approve" }], ...change } };
    await refusedAndUnchanged(name, () => patch("alice", name, "merge", body), message);
  });

  it("refuses an approver's change of spec.capability, naming the immutability rule", async () => {
    const name = await createApproval();
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "merge", { spec: { capability: "aps-schedule-read" } }),
      /spec\.capability is immutable: an Approval records the exact call the agent proposed/,
    );
  });

  it("refuses an approver's finalizer, alone or beside a decision, naming the finalizer rule", async () => {
    const name = await createApproval();
    const hold = { op: "add", path: "/metadata/finalizers", value: ["example.com/hold"] };
    const refusal = new RegExp(
      `approval-finalizers: alice may not add or remove finalizers of Approval ${name}: the finalizer gatehouse\\.dev/audit-lifecycle is the operator's`,
    );
    await refusedAndUnchanged(name, () => patch("alice", name, "json", [hold]), refusal);
    const withDecision = [
      { op: "add", path: "/spec/decisions/-", value: { approver: "alice", verdict: "Approve" } },
      hold,
    ];
    await refusedAndUnchanged(name, () => patch("alice", name, "json", withDecision), refusal);
  });

  it("refuses an approver's finalizer that names the operator's own", async () => {
    const name = await createApproval();
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "merge", { metadata: { finalizers: [APPROVAL_FINALIZER] } }),
      /approval-finalizers: alice may not add or remove finalizers/,
    );
  });

  it("refuses an approver's ownerReference, naming the ownerReferences rule", async () => {
    const name = await createApproval();
    const owner = {
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "anything",
      uid: "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    };
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", [{ op: "add", path: "/metadata/ownerReferences", value: [owner] }]),
      new RegExp(
        `approval-owner-references: the ownerReferences of Approval ${name} tie it to its AgentSession and are the operator's; alice may not change them`,
      ),
    );
  });

  it("refuses a decision once the operator set the phase to Rejected", async () => {
    const name = await createApproval();
    await patchStatusAsOperator(cluster.kubeconfigPath, APPROVAL.plural, ns, name, { phase: "Rejected" });
    await refusedAndUnchanged(
      name,
      () => patch("carol", name, "json", decisionPatch("carol", "Approve")),
      /decision-closed: Approval .* is Rejected and takes no more decisions; carol/,
    );
  });

  it("refuses the requester's Approve when self-approval is off, and accepts their Reject", async () => {
    const name = await createApproval({
      allowSelfApproval: false,
      approvers: { users: ["alice"], groups: [] },
    });
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", decisionPatch("alice", "Approve")),
      /decision-self-approval: alice requested this call and self-approval is not allowed/,
    );
    await decide(kubectl, "alice", ns, name, "Reject", "not now");
    expect((await read(name)).spec.decisions).toEqual([
      { approver: "alice", verdict: "Reject", reason: "not now" },
    ]);
  });

  it("refuses a status write through the subresource by anyone but the operator", async () => {
    const name = await createApproval();
    const setPhase = (user: string) =>
      patch(user, name, "merge", { status: { phase: "Approved" } }, ["--subresource=status"]);
    // An approver has no RBAC on approvals/status at all …
    await refusedAndUnchanged(name, () => setPhase("alice"), /forbidden/i);
    // … and even a cluster admin, whom RBAC allows everything, is refused by admission.
    await refusedAndUnchanged(
      name,
      () => setPhase("admin"),
      /status-writer: the status of Approval .* admin may not/,
    );
  });

  it("ignores a status sent without the subresource: nothing changes, the status stays unset", async () => {
    const name = await createApproval();
    const before = await read(name);
    const run = await patch("alice", name, "merge", { status: { phase: "Approved" } });
    expect(run.code, run.stderr).toBe(0);
    const after = await read(name);
    expect(after.status?.phase).toBeUndefined();
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("refuses an Approval created by anyone but the operator", async () => {
    const text = manifest("Approval", ns, uniqueName("squat"), approvalSpec());
    expectRefused(await kubectl.run("alice", ["create", "-f", "-"], text), /forbidden/i);
    expectRefused(
      await kubectl.run("admin", ["create", "-f", "-"], text),
      /approval-create: only the Gatehouse gateway and controller create Approvals; admin may not/,
    );
  });

  it("refuses a change of spec.arguments that only renames a key, even from a cluster admin", async () => {
    const name = await createApproval();
    const renamed = { spec: { arguments: '{"planID":"plan-1","version":2}' } };
    await refusedAndUnchanged(
      name,
      () => patch("admin", name, "merge", renamed),
      /spec\.arguments is immutable: an Approval records the exact call the agent proposed; to change it, reject it with a reason/,
    );
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "merge", renamed),
      /spec\.arguments is immutable/,
    );
  });
});

describe("the operator's Approval finalizer", () => {
  /** An Approval as the operator creates it: with its finalizer. */
  async function finalizedApproval(): Promise<string> {
    const name = await createApproval();
    const added = await patch(OPERATOR, name, "merge", { metadata: { finalizers: [APPROVAL_FINALIZER] } });
    expect(added.code, added.stderr).toBe(0);
    return name;
  }
  const removeFinalizers = [{ op: "remove", path: "/metadata/finalizers" }];

  it("refuses removing it to an approver without the release verb on approvals", async () => {
    const name = await finalizedApproval();
    await refusedAndUnchanged(
      name,
      () => patch("carol", name, "json", removeFinalizers),
      /approval-finalizers: carol may not add or remove finalizers of Approval .*only a holder of the RBAC verb release on approvals may remove it by hand/,
    );
  });

  it("refuses a cluster admin (who holds the release verb) a finalizer of their own beside it", async () => {
    const name = await finalizedApproval();
    await refusedAndUnchanged(
      name,
      () =>
        patch("admin", name, "merge", { metadata: { finalizers: [APPROVAL_FINALIZER, "example.com/hold"] } }),
      /approval-finalizers: admin may not add or remove finalizers/,
    );
  });

  it("refuses the operator any change of an Approval but that finalizer", async () => {
    const name = await finalizedApproval();
    await refusedAndUnchanged(
      name,
      () =>
        patch(OPERATOR, name, "json", [
          { op: "add", path: "/spec/decisions/-", value: { approver: "carol", verdict: "Approve" } },
        ]),
      /approval-operator: the operator may only add or remove the finalizer gatehouse\.dev\/audit-lifecycle/,
    );
    await refusedAndUnchanged(
      name,
      () =>
        patch(OPERATOR, name, "merge", {
          metadata: { finalizers: [APPROVAL_FINALIZER, "example.com/hold"] },
        }),
      /approval-operator: the operator may only add or remove the finalizer/,
    );
    await refusedAndUnchanged(
      name,
      () =>
        patch(OPERATOR, name, "json", [
          {
            op: "add",
            path: "/metadata/ownerReferences",
            value: [
              { apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d" },
            ],
          },
        ]),
      /approval-operator/,
    );
  });

  it("lets the operator change labels and annotations, as anyone RBAC lets patch an Approval may", async () => {
    const name = await finalizedApproval();
    const run = await patch(OPERATOR, name, "merge", { metadata: { labels: { extra: "x" } } });
    expect(run.code, run.stderr).toBe(0);
    expect((await read(name)).metadata.labels).toMatchObject({ extra: "x" });
  });

  it("lets a cluster admin (who holds the release verb) remove it by hand", async () => {
    const name = await finalizedApproval();
    const removed = await patch("admin", name, "json", removeFinalizers);
    expect(removed.code, removed.stderr).toBe(0);
    const after = await kubectl.json<{ metadata: { finalizers?: string[] } }>("admin", [
      "get",
      "approval",
      name,
      "-n",
      ns,
    ]);
    expect(after.metadata.finalizers ?? []).toEqual([]);
  });
});

describe("Approval updates the API server accepts", () => {
  it("accepts carol's own Approve through group approvers", async () => {
    const name = await createApproval();
    await decide(kubectl, "carol", ns, name, "Approve");
    expect((await read(name)).spec.decisions).toEqual([{ approver: "carol", verdict: "Approve" }]);
  });

  it("accepts alice's own Reject", async () => {
    const name = await createApproval();
    await decide(kubectl, "alice", ns, name, "Reject");
    expect((await read(name)).spec.decisions).toEqual([{ approver: "alice", verdict: "Reject" }]);
  });

  it("accepts an approver's label and annotation, on a Pending Approval and on a decided one", async () => {
    const name = await createApproval();
    const label = (value: string) =>
      patch("alice", name, "merge", {
        metadata: { labels: { "example.com/ticket": value }, annotations: { "example.com/note": value } },
      });
    const pending = await label("chg-1");
    expect(pending.code, pending.stderr).toBe(0);
    await patchStatusAsOperator(cluster.kubeconfigPath, APPROVAL.plural, ns, name, { phase: "Rejected" });
    const decided = await label("chg-2");
    expect(decided.code, decided.stderr).toBe(0);
    const after = await read(name);
    expect(after.metadata.labels).toMatchObject({ "example.com/ticket": "chg-2" });
    expect(after.metadata.annotations).toMatchObject({ "example.com/note": "chg-2" });
    expect(after.spec.decisions).toEqual([]);
  });

  it("accepts a decision appended with client-side kubectl apply, and the annotation it records", async () => {
    const name = await createApproval();
    // What an approver keeps in a file: the manifest of the Approval, with their decision appended.
    const { spec } = await read(name);
    const applied = {
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "Approval",
      metadata: { name, namespace: ns },
      spec: { ...spec, decisions: [...spec.decisions, { approver: "alice", verdict: "Approve" }] },
    };
    const run = await kubectl.run("alice", ["apply", "-f", "-"], JSON.stringify(applied));
    expect(run.code, run.stderr).toBe(0);
    const after = await read(name);
    expect(after.spec.decisions).toEqual([{ approver: "alice", verdict: "Approve" }]);
    expect(Object.keys(after.metadata.annotations ?? {})).toContain(
      "kubectl.kubernetes.io/last-applied-configuration",
    );
  });
});

describe("system components", () => {
  /** Creates a session as alice and an Approval it owns (as the operator does); returns both names. */
  async function ownedApproval(): Promise<{ session: string; name: string }> {
    const session = uniqueName("owner");
    await kubectl.ok(
      "alice",
      ["create", "-f", "-"],
      manifest("AgentSession", ns, session, sessionSpec("alice")),
    );
    const uid = (
      await kubectl.ok("admin", ["get", "agentsession", session, "-n", ns, "-o", "jsonpath={.metadata.uid}"])
    ).stdout;
    const name = uniqueName("apr");
    const owned = JSON.parse(
      manifest("Approval", ns, name, approvalSpec({ sessionRef: { name: session, uid } })),
    );
    owned.metadata.ownerReferences = [
      { apiVersion: "gatehouse.dev/v1alpha1", kind: "AgentSession", name: session, uid, controller: true },
    ];
    await kubectl.ok(OPERATOR, ["create", "-f", "-"], JSON.stringify(owned));
    return { session, name };
  }

  it("lets the garbage collector orphan an Approval when its session is deleted with --cascade=orphan", async () => {
    // The garbage collector picks up newly installed CRDs on its next discovery resync; until it
    // tracks Approvals it cannot orphan one (and deletes it later as ownerless). Wait until a plain
    // background delete of an owning session collects its Approval, which proves it tracks them.
    await eventually("the garbage collector to track Approvals", 180_000, async () => {
      const probe = await ownedApproval();
      await kubectl.ok("admin", ["delete", "agentsession", probe.session, "-n", ns, "--wait=false"]);
      const gone = await eventually("the probe Approval to be collected", 20_000, async () =>
        (await kubectl.run("admin", ["get", "approval", probe.name, "-n", ns])).code !== 0 ? true : undefined,
      ).catch(() => undefined);
      return gone;
    });
    const { session, name } = await ownedApproval();
    await kubectl.ok("admin", [
      "delete",
      "agentsession",
      session,
      "-n",
      ns,
      "--cascade=orphan",
      "--timeout=60s",
    ]);
    const approval = await kubectl.json<{ metadata: { ownerReferences?: unknown[] } }>("admin", [
      "get",
      "approval",
      name,
      "-n",
      ns,
    ]);
    expect(approval.metadata.ownerReferences ?? []).toEqual([]);
  });
});

describe("the operator's admission guard", () => {
  const operatorClients = () => makeClients(loadKubeConfig(cluster.kubeconfigPath, OPERATOR));
  const BINDING = "validatingadmissionpolicybinding";
  const POLICY = "validatingadmissionpolicy";

  /** What a cluster admin would do to get around the decision rules: an edit of the decide policy or binding. */
  interface Tamper {
    kind: typeof BINDING | typeof POLICY;
    type: "json" | "merge";
    body: unknown;
    message: string;
  }

  /** `admin` changes the decide policy or binding as `tamper` says. */
  async function tamperWith(tamper: Tamper): Promise<void> {
    const body = JSON.stringify(tamper.body);
    await kubectl.ok("admin", ["patch", tamper.kind, DECISION_POLICY, "--type", tamper.type, "-p", body]);
  }

  /**
   * Puts the decide policy and binding back as crds/ has them. They are deleted first: a server-side
   * apply leaves alone the fields another manager added (an objectSelector set by kubectl patch).
   */
  async function restore(): Promise<void> {
    await kubectl.ok("admin", ["delete", BINDING, DECISION_POLICY, "--ignore-not-found"]);
    await kubectl.ok("admin", ["delete", POLICY, DECISION_POLICY, "--ignore-not-found"]);
    await installApi(kubectl);
  }

  /** bob, who is no approver, appends his Approve; resolves once the API server lets it through. */
  async function bobsDecisionLands(name: string): Promise<void> {
    await eventually("bob's decision to get through", 30_000, async () =>
      (await patch("bob", name, "json", decisionPatch("bob", "Approve"))).code === 0 ? true : undefined,
    );
    expect((await read(name)).spec.decisions).toEqual([{ approver: "bob", verdict: "Approve" }]);
  }

  it("finds every Approval policy and binding installed as the chart renders them for its user", async () => {
    expect(await decisionRulesEnforced(operatorClients())).toEqual({ enforced: true });
  });

  it("reports the decide binding missing when it is deleted, and enforced once it is back", async () => {
    await kubectl.ok("admin", ["delete", BINDING, DECISION_POLICY]);
    try {
      expect(await decisionRulesEnforced(operatorClients())).toEqual({
        enforced: false,
        message: `ValidatingAdmissionPolicyBinding ${DECISION_POLICY} is missing`,
      });
    } finally {
      await restore();
    }
    expect(await decisionRulesEnforced(operatorClients())).toEqual({ enforced: true });
  });

  it.each<[string, Tamper]>([
    [
      "a binding that only warns",
      {
        kind: BINDING,
        type: "merge",
        body: { spec: { validationActions: ["Warn"] } },
        message: `ValidatingAdmissionPolicyBinding ${DECISION_POLICY}: validationActions is [Warn], the chart renders [Deny]`,
      },
    ],
    [
      "a binding whose objectSelector matches nothing",
      {
        kind: BINDING,
        type: "merge",
        body: { spec: { matchResources: { objectSelector: { matchLabels: { "example.com/never": "x" } } } } },
        message: `ValidatingAdmissionPolicyBinding ${DECISION_POLICY}: matchResources.objectSelector is {"matchLabels":{"example.com/never":"x"}}, the chart renders {}`,
      },
    ],
    [
      "a policy whose namespaceSelector matches only labelled namespaces",
      {
        kind: POLICY,
        type: "merge",
        body: {
          spec: {
            matchConstraints: { namespaceSelector: { matchLabels: { "example.com/audited": "true" } } },
          },
        },
        message: `ValidatingAdmissionPolicy ${DECISION_POLICY}: matchConstraints.namespaceSelector is {"matchLabels":{"example.com/audited":"true"}}, the chart renders {}`,
      },
    ],
    [
      "a policy whose approver rule was edited to pass everyone",
      {
        kind: POLICY,
        type: "json",
        body: [{ op: "replace", path: "/spec/validations/3/expression", value: "true" }],
        message: `ValidatingAdmissionPolicy ${DECISION_POLICY}: validations[3].expression is "true", the chart renders "variables.added != 1 || variables.isApprover`,
      },
    ],
  ])(
    "counts %s as not enforced, though bob's decision gets through; restored, enforced again",
    async (_case, tamper) => {
      const name = await createApproval();
      await tamperWith(tamper);
      try {
        await bobsDecisionLands(name);
        const verdict = await decisionRulesEnforced(operatorClients());
        expect(verdict.enforced).toBe(false);
        expect(verdict.enforced ? "" : verdict.message).toContain(tamper.message);
      } finally {
        await restore();
      }
      expect(await decisionRulesEnforced(operatorClients())).toEqual({ enforced: true });
      const again = await createApproval();
      await eventually("the restored rules to refuse bob", 30_000, async () => {
        const run = await patch("bob", again, "json", decisionPatch("bob", "Approve"));
        return run.code !== 0 && /decision-approver: bob/.test(run.stderr) ? true : undefined;
      });
      expect((await read(again)).spec.decisions).toEqual([]);
    },
  );

  it("counts policies rendered for another operator user as not enforced", async () => {
    const verdict = await decisionRulesEnforced(
      operatorClients(),
      "system:serviceaccount:elsewhere:gatehouse",
    );
    expect(verdict.enforced).toBe(false);
    expect(verdict.enforced ? "" : verdict.message).toMatch(
      /ValidatingAdmissionPolicy gatehouse-approval-decide: matchConditions\[0\]\.expression is "request\.userInfo\.username != 'system:serviceaccount:gatehouse-system:gatehouse-controller'", the chart renders "request\.userInfo\.username != 'system:serviceaccount:elsewhere:gatehouse'"/,
    );
  });
});

describe("resolutions of an Unknown outcome the API server refuses or lets through", () => {
  const resolution = (resolver: string, outcome = "Succeeded", reason = "APS shows plan-1 at version 3") => ({
    resolver,
    outcome,
    reason,
  });
  const append = (value: unknown) => [{ op: "add", path: "/spec/resolutions/-", value }];
  /** A platform engineer: gatehouse-platform grants the verb resolve on approvals. */
  const asPlatform = (name: string, body: unknown) =>
    patch("admin", name, "json", body, ["--as", "pat", "--as-group", "platform"]);

  async function unknownApproval(overrides: Json = {}): Promise<string> {
    const name = await createApproval(overrides);
    await patchStatusAsOperator(cluster.kubeconfigPath, APPROVAL.plural, ns, name, { phase: "Unknown" });
    return name;
  }

  it("refuses a resolution by an approver who lacks the resolve verb", async () => {
    const name = await unknownApproval();
    await refusedAndUnchanged(
      name,
      () => patch("carol", name, "json", append(resolution("carol"))),
      new RegExp(
        `resolution-verb: carol may resolve Approval ${name} only with the RBAC verb resolve on approvals`,
      ),
    );
  });

  it("refuses a resolution appended in someone else's name", async () => {
    const name = await unknownApproval();
    await refusedAndUnchanged(
      name,
      () => asPlatform(name, append(resolution("carol"))),
      /resolution-own-name: pat may append a resolution only in their own name, not as carol/,
    );
  });

  it.each(["Pending", "Succeeded"])("refuses a resolution while the Approval is %s", async (phase) => {
    const name = await createApproval();
    if (phase !== "Pending") {
      await patchStatusAsOperator(cluster.kubeconfigPath, APPROVAL.plural, ns, name, { phase });
    }
    await refusedAndUnchanged(
      name,
      () => asPlatform(name, append(resolution("pat"))),
      new RegExp(`resolution-not-unknown: Approval ${name} is ${phase}`),
    );
  });

  it("refuses two resolutions appended in one patch", async () => {
    const name = await unknownApproval();
    await refusedAndUnchanged(
      name,
      () => asPlatform(name, [...append(resolution("pat")), ...append(resolution("pat", "Failed"))]),
      /resolution-append: pat may only append exactly one resolution/,
    );
  });

  it("refuses a second resolution, naming the first, and a resolution together with a decision", async () => {
    const name = await unknownApproval();
    expect((await asPlatform(name, append(resolution("pat")))).code).toBe(0);
    await refusedAndUnchanged(
      name,
      () => asPlatform(name, append(resolution("pat", "Failed"))),
      new RegExp(`resolution-once: Approval ${name} is already resolved by pat \\(Succeeded\\)`),
    );
    const other = await unknownApproval();
    const withDecision = [
      ...append(resolution("pat")),
      { op: "add", path: "/spec/decisions/-", value: { approver: "pat", verdict: "Approve" } },
    ];
    await refusedAndUnchanged(
      other,
      () => asPlatform(other, withDecision),
      /resolution-only: pat may append a resolution or a decision to Approval .*, not both in one request/,
    );
  });

  it("lets the holder of the resolve verb append one resolution in their own name while Unknown", async () => {
    const name = await unknownApproval();
    const run = await asPlatform(name, append(resolution("pat", "Failed", "no publish in APS")));
    expect(run.code).toBe(0);
    expect((await read(name)).spec).toMatchObject({
      resolutions: [{ resolver: "pat", outcome: "Failed", reason: "no publish in APS" }],
      decisions: [],
    });
    await refusedAndUnchanged(
      name,
      () => asPlatform(name, [{ op: "remove", path: "/spec/resolutions/0" }]),
      /spec\.resolutions is append-only/,
    );
  });

  it("refuses any decision on the record of an Auto execution, even before the operator set its phase", async () => {
    const name = await createApproval({ autoExecution: true });
    await refusedAndUnchanged(
      name,
      () => patch("alice", name, "json", decisionPatch("alice", "Approve")),
      new RegExp(`decision-auto-execution: Approval ${name} records a call that ran without approval`),
    );
  });
});
