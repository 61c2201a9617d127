/**
 * The Gatehouse API on the real API server (DESIGN §2, §7): the CRDs install and document themselves,
 * reject bad objects naming the field, agree with the zod schemas they are generated from, admission
 * binds AgentSessions to their subject, and the persona ClusterRoles grant what DESIGN §7 says.
 * Every request is made as the named user through that user's kubeconfig context.
 */
import { beforeAll, describe, expect, inject, it } from "vitest";
import type { z } from "zod";
import { AgentSessionSpec } from "../../operator/src/api/agentsession.ts";
import { ApprovalSpec } from "../../operator/src/api/approval.ts";
import { CapabilitySpec } from "../../operator/src/api/capability.ts";
import { AGENT_SESSION } from "../../operator/src/api/kinds.ts";
import { ProviderInstanceSpec } from "../../operator/src/api/providerinstance.ts";
import { toolNameOf } from "../../operator/src/core/tool-names.ts";
import { type Kubectl, kubectlFor } from "../e2e/kubectl.ts";
import {
  approvalSpec,
  capabilitySpec,
  expectRefused,
  installApi,
  type Json,
  manifest,
  OPERATOR,
  patchAs,
  patchStatusAsOperator,
  personaNamespace,
  providerSpec,
  sessionSpec,
  uniqueName,
} from "./api-fixtures.ts";

const cluster = inject("cluster");
const kubectl: Kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
let ns: string;

beforeAll(async () => {
  await installApi(kubectl);
  ns = await personaNamespace(kubectl, "api");
});

/** `kubectl create --dry-run=server` of one object as `user`. */
function dryRun(user: string, kind: string, spec: Json) {
  return kubectl.run(
    user,
    ["create", "--dry-run=server", "-f", "-"],
    manifest(kind, ns, uniqueName("x"), spec),
  );
}

/** Who creates each kind in these tests (admission binds sessions to their creator, Approvals to the operator). */
const CREATOR: Record<string, string> = {
  AgentSession: "alice",
  Capability: "admin",
  ProviderInstance: "admin",
  Approval: OPERATOR,
};

describe("installing the API", () => {
  it("establishes the four CRDs", async () => {
    const crds = await kubectl.json<{
      items: Array<{
        metadata: { name: string };
        status: { conditions: Array<{ type: string; status: string }> };
      }>;
    }>("admin", ["get", "crd", "-l", "app.kubernetes.io/part-of=gatehouse"]);
    expect(crds.items.map((c) => c.metadata.name).sort()).toEqual([
      "agentsessions.gatehouse.dev",
      "approvals.gatehouse.dev",
      "capabilities.gatehouse.dev",
      "providerinstances.gatehouse.dev",
    ]);
    for (const crd of crds.items) {
      expect(crd.status.conditions).toContainEqual(
        expect.objectContaining({ type: "Established", status: "True" }),
      );
    }
  });

  it("documents itself: kubectl explain agentsession.spec.limits prints the field descriptions", async () => {
    const { stdout } = await kubectl.ok("alice", ["explain", "agentsession.spec.limits"]);
    expect(stdout).toMatch(/minimum of this and the operator's\s+ceiling/);
    expect(stdout).toMatch(/maxTurns\s+<integer>/);
    expect(stdout).toMatch(/Most model turns/);
  });

  it("lists all four kinds under kubectl get gatehouse", async () => {
    const name = uniqueName("every");
    await kubectl.ok(
      "alice",
      ["create", "-f", "-"],
      manifest("AgentSession", ns, name, sessionSpec("alice")),
    );
    await kubectl.ok("admin", ["create", "-f", "-"], manifest("Capability", ns, name, capabilitySpec()));
    await kubectl.ok("admin", ["create", "-f", "-"], manifest("ProviderInstance", ns, name, providerSpec()));
    await kubectl.ok(OPERATOR, ["create", "-f", "-"], manifest("Approval", ns, name, approvalSpec()));
    const { stdout } = await kubectl.ok("admin", ["get", "gatehouse", "-n", ns, "-o", "name"]);
    for (const kind of ["agentsession", "capability", "providerinstance", "approval"]) {
      expect(stdout).toContain(`${kind}.gatehouse.dev/${name}`);
    }
  });
});

/** Per kind: a valid spec and invalid ones, each with the field its error must name. */
const VALIDATION: Array<{ kind: string; valid: Json; invalid: Array<[string, Json, RegExp]> }> = [
  {
    kind: "AgentSession",
    valid: sessionSpec("alice"),
    invalid: [
      ["no model", { subject: { user: "alice" }, messages: [{ text: "hi" }] }, /spec\.model: Required value/],
      ["no messages", sessionSpec("alice", { messages: [] }), /spec\.messages/],
      ["maxTurns 0", sessionSpec("alice", { limits: { maxTurns: 0 } }), /spec\.limits\.maxTurns/],
      [
        "an unknown engine",
        sessionSpec("alice", { engine: "no-such-engine" }),
        /spec\.engine: Unsupported value: "no-such-engine"/,
      ],
    ],
  },
  {
    kind: "Capability",
    valid: capabilitySpec({ policy: { approval: "Required", approvers: { groups: ["approvers"] } } }),
    invalid: [
      ["id Aps..Publish", capabilitySpec({ id: "Aps..Publish" }), /spec\.id/],
      ["a 65-character id", capabilitySpec({ id: `aps.${"a".repeat(61)}` }), /spec\.id/],
      [
        "approval Sometimes",
        capabilitySpec({ policy: { approval: "Sometimes" } }),
        /spec\.policy\.approval: Unsupported value/,
      ],
      ["no providerRef", { id: "aps.schedule.read" }, /spec\.providerRef: Required value/],
    ],
  },
  {
    kind: "ProviderInstance",
    valid: providerSpec({ placement: "Shared", replicas: 2, config: { APS_URL: "http://aps" } }),
    invalid: [
      [
        "placement Everywhere",
        providerSpec({ placement: "Everywhere" }),
        /spec\.placement: Unsupported value/,
      ],
      ["replicas -1", providerSpec({ replicas: -1 }), /spec\.replicas/],
      ["no image", { type: "aps" }, /spec\.image: Required value/],
      ["a config value that is not a string", providerSpec({ config: { PORT: 8080 } }), /spec\.config\.PORT/],
    ],
  },
  {
    kind: "Approval",
    valid: approvalSpec(),
    invalid: [
      ["arguments that are not a JSON object", approvalSpec({ arguments: "[1,2]" }), /spec\.arguments/],
      ["requiredApprovals 0", approvalSpec({ requiredApprovals: 0 }), /spec\.requiredApprovals/],
      [
        "a verdict Maybe",
        approvalSpec({ decisions: [{ approver: "alice", verdict: "Maybe" }] }),
        /spec\.decisions\[0\]\.verdict: Unsupported value/,
      ],
      ["no requester", { ...approvalSpec(), requester: undefined }, /spec\.requester: Required value/],
    ],
  },
];

describe("CRD validation", () => {
  for (const { kind, valid, invalid } of VALIDATION) {
    it(`accepts a valid ${kind}`, async () => {
      const result = await dryRun(CREATOR[kind] ?? "admin", kind, valid);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
    });

    it.each(invalid)(`rejects a ${kind} with %s, naming the field`, async (_what, spec, field) => {
      expectRefused(await dryRun(CREATOR[kind] ?? "admin", kind, spec), field);
    });
  }

  it("accepts the capability id erp.create-order, whose tool name is erp_create-order", async () => {
    const result = await dryRun("admin", "Capability", capabilitySpec({ id: "erp.create-order" }));
    expect(result.code).toBe(0);
    expect(toolNameOf("erp.create-order")).toBe("erp_create-order");
  });
});

const SCHEMAS: Record<string, z.ZodType> = {
  AgentSession: AgentSessionSpec,
  Capability: CapabilitySpec,
  ProviderInstance: ProviderInstanceSpec,
  Approval: ApprovalSpec,
};

/** Create-time examples beyond VALIDATION, where zod and the CRD could plausibly disagree. */
const AGREEMENT: Array<[string, string, Json]> = [
  [
    "AgentSession",
    "an endpointRef that is not a DNS label",
    sessionSpec("alice", { model: { name: "m", endpointRef: "Not_A_Label" } }),
  ],
  ["AgentSession", "an empty model name", sessionSpec("alice", { model: { name: "" } })],
  [
    "AgentSession",
    "65 messages",
    sessionSpec("alice", { messages: Array.from({ length: 65 }, () => ({ text: "x" })) }),
  ],
  ["AgentSession", "an empty message", sessionSpec("alice", { messages: [{ text: "" }] })],
  ["AgentSession", "a timeout of a week", sessionSpec("alice", { limits: { timeoutSeconds: 604800 } })],
  ["AgentSession", "a timeout over a week", sessionSpec("alice", { limits: { timeoutSeconds: 604801 } })],
  ["AgentSession", "a capability name with upper case", sessionSpec("alice", { capabilities: ["Aps-Read"] })],
  ["Capability", "a single-segment id", capabilitySpec({ id: "publish" })],
  ["Capability", "an id with a double hyphen", capabilitySpec({ id: "aps.a--b" })],
  ["Capability", "a 64-character id", capabilitySpec({ id: `aps.${"a".repeat(60)}` })],
  ["Capability", "requiredApprovals 11", capabilitySpec({ policy: { requiredApprovals: 11 } })],
  ["Capability", "a ttl of 59 seconds", capabilitySpec({ policy: { ttlSeconds: 59 } })],
  ["ProviderInstance", "placement Sidecar", providerSpec({ placement: "Sidecar" })],
  ["ProviderInstance", "21 replicas", providerSpec({ replicas: 21 })],
  ["ProviderInstance", "auth kind kerberos", providerSpec({ auth: { kind: "kerberos" } })],
  [
    "ProviderInstance",
    "a free-form allowedNamespaces selector",
    providerSpec({ allowedNamespaces: { matchLabels: { a: "b" } } }),
  ],
  ["Approval", "an argumentsDigest in upper case", approvalSpec({ argumentsDigest: "A".repeat(64) })],
  ["Approval", "arguments with a raw newline", approvalSpec({ arguments: '{"a":\n1}' })],
  [
    "Approval",
    "33 decisions",
    approvalSpec({
      decisions: Array.from({ length: 33 }, (_, i) => ({ approver: `u${i}`, verdict: "Approve" })),
    }),
  ],
  ["Approval", "11 required approvals", approvalSpec({ requiredApprovals: 11 })],
];

describe("zod and the CRD agree", () => {
  const table: Array<[string, string, Json]> = [
    ...VALIDATION.map(({ kind, valid }): [string, string, Json] => [kind, "the valid example", valid]),
    ...VALIDATION.flatMap(({ kind, invalid }) =>
      invalid.map(([what, spec]): [string, string, Json] => [kind, what, spec]),
    ),
    ...AGREEMENT,
  ];
  it.each(table)("%s with %s is accepted by both or rejected by both", async (kind, _what, spec) => {
    const schema = SCHEMAS[kind];
    if (!schema) throw new Error(`no schema for ${kind}`);
    const byZod = schema.safeParse(JSON.parse(JSON.stringify(spec))).success;
    const result = await dryRun(CREATOR[kind] ?? "admin", kind, spec);
    expect({
      byZod,
      byApiServer: result.code === 0,
      stderr: byZod === (result.code === 0) ? "" : result.stderr,
    }).toEqual({
      byZod,
      byApiServer: byZod,
      stderr: "",
    });
  });
});

describe("AgentSession admission", () => {
  it("refuses bob creating a session whose subject is alice", async () => {
    expectRefused(
      await kubectl.run(
        "bob",
        ["create", "-f", "-"],
        manifest("AgentSession", ns, uniqueName("s"), sessionSpec("alice")),
      ),
      /session-subject: spec\.subject\.user must be the creating user; bob may not create a session for alice/,
    );
  });

  it("refuses alice claiming group approvers, which she is not in", async () => {
    const spec = sessionSpec("alice", { subject: { user: "alice", groups: ["approvers"] } });
    expectRefused(
      await kubectl.run("alice", ["create", "-f", "-"], manifest("AgentSession", ns, uniqueName("s"), spec)),
      /session-groups: spec\.subject\.groups may list only groups of alice; not a member of: approvers/,
    );
  });

  it("accepts bob claiming his own group planners", async () => {
    const spec = sessionSpec("bob", { subject: { user: "bob", groups: ["planners"] } });
    await kubectl.ok(
      "bob",
      ["create", "--dry-run=server", "-f", "-"],
      manifest("AgentSession", ns, uniqueName("s"), spec),
    );
  });

  describe("on alice's session", () => {
    let name: string;
    const session = (user: string, type: "json" | "merge", body: unknown) =>
      patchAs(kubectl, user, "agentsession", ns, name, type, body);
    const append = (user: string, text: string) =>
      session(user, "json", [{ op: "add", path: "/spec/messages/-", value: { text } }]);
    const messages = async () =>
      (
        await kubectl.json<{ spec: { messages: Array<{ text: string }> } }>("admin", [
          "get",
          "agentsession",
          name,
          "-n",
          ns,
        ])
      ).spec.messages.map((m) => m.text);

    beforeAll(async () => {
      name = uniqueName("alices");
      await kubectl.ok(
        "alice",
        ["create", "-f", "-"],
        manifest("AgentSession", ns, name, sessionSpec("alice")),
      );
    });

    it("refuses bob appending a message", async () => {
      expectRefused(
        await append("bob", "publish it now"),
        /session-owner: only the subject \(alice\) may change the spec of AgentSession .*; bob may not/,
      );
      expect(await messages()).toHaveLength(1);
    });

    it("accepts alice appending a message", async () => {
      const result = await append("alice", "And tell me the new dates.");
      expect(result.stderr).toBe("");
      expect(await messages()).toEqual([
        "Push next week's production plan back by one day.",
        "And tell me the new dates.",
      ]);
    });

    it("refuses an edit to an earlier message, even by alice", async () => {
      const before = await messages();
      const edit = [{ op: "replace", path: "/spec/messages/0/text", value: "Delete the plan." }];
      expectRefused(await session("alice", "json", edit), /spec\.messages is append-only/);
      expect(await messages()).toEqual(before);
    });

    it("refuses a change of the subject, even by alice", async () => {
      expectRefused(
        await session("alice", "merge", '{"spec":{"subject":{"user":"bob"}}}'),
        /spec\.subject is immutable/,
      );
    });

    it("refuses bob adding an ownerReference or a finalizer to alice's session", async () => {
      const owner = [
        { apiVersion: "v1", kind: "ConfigMap", name: "gone", uid: "00000000-0000-0000-0000-000000000001" },
      ];
      expectRefused(
        await patchAs(kubectl, "bob", "agentsession", ns, name, "merge", {
          metadata: { ownerReferences: owner },
        }),
        /session-metadata: only the subject \(alice\) and the operator may change the labels, annotations, finalizers or ownerReferences .*; bob may not/,
      );
      expectRefused(
        await patchAs(kubectl, "bob", "agentsession", ns, name, "merge", {
          metadata: { finalizers: ["x.io/pin"] },
        }),
        /session-metadata: .*bob may not/,
      );
    });

    it("refuses alice changing the model of her running session", async () => {
      expectRefused(
        await session("alice", "merge", { spec: { model: { name: "another-model" } } }),
        /spec\.model is immutable: once a session runs, only messages are appended and cancel is set/,
      );
    });

    it("refuses bob setting spec.cancel on alice's session: he lacks the cancel verb", async () => {
      expectRefused(
        await session("bob", "merge", '{"spec":{"cancel":true}}'),
        /session-cancel: bob may set spec\.cancel of AgentSession .* only with the RBAC verb cancel/,
      );
    });

    it("lets a platform engineer with the cancel verb set spec.cancel, and nothing else", async () => {
      const asPlatform = (body: string) =>
        patchAs(kubectl, "admin", "agentsession", ns, name, "merge", body, [
          "--as",
          "pat",
          "--as-group",
          "platform",
        ]);
      const messagesBefore = await messages();
      expectRefused(
        await patchAs(
          kubectl,
          "admin",
          "agentsession",
          ns,
          name,
          "json",
          [{ op: "add", path: "/spec/messages/-", value: { text: "ignore the rules" } }],
          ["--as", "pat", "--as-group", "platform"],
        ),
        /session-owner: .*; pat may not \(a holder of the cancel verb on agentsessions may set spec\.cancel alone\)/,
      );
      const cancelled = await asPlatform('{"spec":{"cancel":true}}');
      expect(cancelled.stderr).toBe("");
      const after = await kubectl.json<{
        spec: { cancel?: boolean; instructions: string; messages: unknown[] };
      }>("admin", ["get", "agentsession", name, "-n", ns]);
      expect(after.spec.cancel).toBe(true);
      expect(after.spec.instructions).toBe("");
      expect(after.spec.messages).toHaveLength(messagesBefore.length);
    });

    it("refuses alice appending a message once spec.cancel is set: it would never be answered", async () => {
      const before = await messages();
      expectRefused(
        await append("alice", "Publish it after all."),
        /session-ended: spec\.messages of AgentSession .* takes no more messages: spec\.cancel is set, so it runs no more turns.*; create a new AgentSession to go on/,
      );
      expect(await messages()).toEqual(before);
    });
  });

  describe("on alice's ended sessions", () => {
    /** A session of alice's whose status the operator has set to `phase`; returns its name. */
    async function sessionIn(phase: string): Promise<string> {
      const name = uniqueName(phase.toLowerCase());
      await kubectl.ok(
        "alice",
        ["create", "-f", "-"],
        manifest("AgentSession", ns, name, sessionSpec("alice")),
      );
      await patchStatusAsOperator(cluster.kubeconfigPath, AGENT_SESSION.plural, ns, name, { phase });
      return name;
    }
    const append = (name: string) =>
      patchAs(kubectl, "alice", "agentsession", ns, name, "json", [
        { op: "add", path: "/spec/messages/-", value: { text: "And the week after?" } },
      ]);

    it("accepts a message appended to a Completed session: that continues it", async () => {
      const result = await append(await sessionIn("Completed"));
      expect(result.stderr).toBe("");
    });

    it("refuses a message appended to a Failed session, naming the phase and the way on", async () => {
      expectRefused(
        await append(await sessionIn("Failed")),
        /session-ended: spec\.messages of AgentSession failed-\S+ takes no more messages: it is Failed, so it runs no more turns and a message appended to it would never be answered; create a new AgentSession to go on/,
      );
    });

    it("still lets alice edit the metadata of her Failed session", async () => {
      const name = await sessionIn("Failed");
      const labelled = await patchAs(kubectl, "alice", "agentsession", ns, name, "merge", {
        metadata: { labels: { reviewed: "yes" } },
      });
      expect(labelled.stderr).toBe("");
    });
  });
});

describe("persona ClusterRoles", () => {
  /** `kubectl auth can-i`; users without a context of their own are impersonated by admin. */
  const can = async (user: string, verb: string, resource: string, groups: string[] = []) => {
    const ownContext = ["alice", "bob", "carol"].includes(user);
    const impersonate = ownContext ? [] : ["--as", user, ...groups.flatMap((g) => ["--as-group", g])];
    const context = ownContext ? user : "admin";
    const [plural, subresource] = resource.split("/");
    const sub = subresource ? [`--subresource=${subresource}`] : [];
    const result = await kubectl.run(context, [
      "auth",
      "can-i",
      verb,
      plural ?? resource,
      ...sub,
      "-n",
      ns,
      ...impersonate,
    ]);
    return result.stdout.trim() === "yes";
  };

  it.each([
    // session users (alice, bob): their own sessions, read the rest
    ["alice", "create", "agentsessions.gatehouse.dev", true],
    ["alice", "patch", "agentsessions.gatehouse.dev", true],
    ["alice", "list", "capabilities.gatehouse.dev", true],
    ["alice", "create", "capabilities.gatehouse.dev", false],
    ["bob", "patch", "providerinstances.gatehouse.dev", false],
    ["alice", "cancel", "agentsessions.gatehouse.dev", false],
    // approvers (carol): decide, never create or write status
    ["carol", "patch", "approvals.gatehouse.dev", true],
    ["carol", "get", "approvals.gatehouse.dev", true],
    ["carol", "create", "approvals.gatehouse.dev", false],
    ["carol", "patch", "approvals.gatehouse.dev/status", false],
    ["carol", "update", "agentsessions.gatehouse.dev/status", false],
    ["carol", "create", "agentsessions.gatehouse.dev", false],
    ["carol", "delete", "approvals.gatehouse.dev", false],
  ])("%s may %s %s: %s", async (user, verb, resource, expected) => {
    expect(await can(user, verb, resource)).toBe(expected);
  });

  it.each([
    ["create", "capabilities.gatehouse.dev", true],
    ["delete", "providerinstances.gatehouse.dev", true],
    ["cancel", "agentsessions.gatehouse.dev", true],
    ["create", "approvals.gatehouse.dev", false],
    ["patch", "capabilities.gatehouse.dev/status", false],
    ["delete", "approvals.gatehouse.dev", false],
  ])("the platform persona may %s %s: %s", async (verb, resource, expected) => {
    expect(await can("pat", verb, resource, ["platform"])).toBe(expected);
  });

  it.each([
    ["list", "approvals.gatehouse.dev", true],
    ["watch", "agentsessions.gatehouse.dev", true],
    ["create", "agentsessions.gatehouse.dev", false],
    ["patch", "approvals.gatehouse.dev", false],
    ["update", "capabilities.gatehouse.dev", false],
  ])("the view persona may %s %s: %s", async (verb, resource, expected) => {
    expect(await can("vic", verb, resource, ["viewers"])).toBe(expected);
  });

  it("refuses a session user creating a Capability", async () => {
    expectRefused(await dryRun("alice", "Capability", capabilitySpec()), /forbidden/i);
  });

  it("refuses an approver creating an Approval or writing any status", async () => {
    expectRefused(await dryRun("carol", "Approval", approvalSpec()), /forbidden/i);
    const session = uniqueName("st");
    await kubectl.ok(
      "alice",
      ["create", "-f", "-"],
      manifest("AgentSession", ns, session, sessionSpec("alice")),
    );
    expectRefused(
      await patchAs(
        kubectl,
        "carol",
        "agentsession",
        ns,
        session,
        "merge",
        { status: { phase: "Completed" } },
        ["--subresource=status"],
      ),
      /forbidden/i,
    );
  });

  it("gives the built-in view role read access to the four kinds", async () => {
    const result = await kubectl.run("admin", [
      "auth",
      "can-i",
      "list",
      "approvals.gatehouse.dev",
      "-n",
      ns,
      "--as",
      "viewer",
    ]);
    expect(result.stdout.trim()).toBe("no");
    await kubectl.ok("admin", [
      "create",
      "rolebinding",
      "viewer",
      "-n",
      ns,
      "--clusterrole",
      "view",
      "--user",
      "viewer",
    ]);
    const after = await kubectl.run("admin", [
      "auth",
      "can-i",
      "list",
      "approvals.gatehouse.dev",
      "-n",
      ns,
      "--as",
      "viewer",
    ]);
    expect(after.stdout.trim()).toBe("yes");
  });
});
