/**
 * The conflict sweep without a cluster: which `approval.conflict` records name which squat (both
 * payload forms), the pure marking decision as a table, and one sweep over Core's in-memory chain
 * writing through a stand-in API server that records each status patch (and refuses one with 409).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval } from "../../api/kinds.ts";
import { AuditKind } from "../../core/audit.ts";
import { createInMemoryWorld } from "../../core/in-memory-ports.ts";
import type { AuditEntry } from "../../core/ports.ts";
import type { Caches } from "../../kube/runtime/caches.ts";
import { makeClients } from "../../kube/runtime/client.ts";
import {
  CONFLICT_LOOK_BACK_MS,
  conflictOf,
  markRecordedConflicts,
  planConflictMark,
  type RecordedConflict,
} from "./conflict-sweep.ts";

const NOW = new Date("2026-12-01T10:10:00Z");
const RECORDED_AT = Date.parse("2026-12-01T10:09:00Z") * 1000;
const NAME = "apr-0123456789abcdef0123";
const EXECUTION = "0123456789abcdef0123".repeat(2);
const quiet = { info() {}, warn() {}, error() {} } as unknown as Logger;

function record(payload: AuditEntry["payload"], atMicros = RECORDED_AT): AuditEntry {
  return {
    kind: AuditKind.approvalConflict,
    actor: "alice",
    outcome: "failure",
    sessionUid: "uid-1",
    executionId: EXECUTION,
    atMicros,
    payload,
  };
}

function squat(options: { uid?: string; created?: string; status?: Approval["status"] } = {}): Approval {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Approval",
    metadata: {
      name: NAME,
      namespace: "plant-a",
      uid: options.uid ?? "squat-uid",
      resourceVersion: "7",
      creationTimestamp: options.created ?? "2026-12-01T10:08:00Z",
    },
    spec: {
      executionId: EXECUTION,
      sessionRef: { name: "s1", uid: "uid-1" },
      capability: "aps-schedule-publish",
      capabilityId: "aps.schedule.publish",
      providerRef: { name: "aps" },
      arguments: "{}",
      argumentsDigest: "a".repeat(64),
      schemaDigest: "",
      requester: { user: "alice", groups: [] },
      approvers: { users: ["alice"], groups: [] },
      requiredApprovals: 1,
      allowSelfApproval: true,
      expiresAt: "2026-12-01T11:00:00Z",
      decisions: [],
      resolutions: [],
    },
    ...(options.status ? { status: options.status } : {}),
  };
}

const recorded: RecordedConflict = {
  namespace: "plant-a",
  name: NAME,
  executionId: EXECUTION,
  atMicros: RECORDED_AT,
  approvalUid: "squat-uid",
};

describe("conflictOf", () => {
  it("reads the namespace/name form with the squat's uid", () => {
    expect(
      conflictOf(record({ session: "plant-a/s1", approval: `plant-a/${NAME}`, approvalUid: "squat-uid" })),
    ).toEqual(recorded);
  });

  it("reads an earlier version's bare name in the session's namespace, without a uid", () => {
    expect(conflictOf(record({ session: "plant-a/s1", tool: "t", approval: NAME }))).toEqual({
      namespace: "plant-a",
      name: NAME,
      executionId: EXECUTION,
      atMicros: RECORDED_AT,
    });
  });

  it("names nothing for a bare name without a session, or a record of another kind", () => {
    expect(conflictOf(record({ approval: NAME }))).toBeUndefined();
    expect(
      conflictOf({ ...record({ approval: `plant-a/${NAME}` }), kind: "approval.requested" }),
    ).toBeUndefined();
  });
});

describe("planConflictMark", () => {
  it.each([
    { name: "the recorded squat, unmarked → Failed, Ready=False Conflict", approval: squat(), marks: true },
    {
      name: "the recorded squat after the reconciler saw it Pending → Failed, Ready=False Conflict",
      approval: squat({ status: { phase: "Pending" } }),
      marks: true,
    },
    {
      name: "another object under the name now (another uid) → nothing",
      approval: squat({ uid: "new" }),
      marks: false,
    },
    {
      name: "already marked → nothing",
      approval: squat({
        status: {
          phase: "Failed",
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "Conflict",
              message: "m",
              lastTransitionTime: "2026-12-01T10:09:05Z",
            },
          ],
        },
      }),
      marks: false,
    },
  ])("$name", ({ approval, marks }) => {
    const status = planConflictMark(approval, recorded, NOW);
    if (!marks) {
      expect(status).toBeUndefined();
      return;
    }
    expect(status?.phase).toBe("Failed");
    expect(status?.conditions).toContainEqual(
      expect.objectContaining({
        type: "Ready",
        status: "False",
        reason: "Conflict",
        message: `Approval ${NAME} already exists but was not created for execution ${EXECUTION}; refusing it`,
      }),
    );
  });

  it("marks, for a record without a uid, only an object created no later than the record", () => {
    const { approvalUid: _uid, ...old } = recorded;
    expect(planConflictMark(squat({ uid: "any" }), old, NOW)?.phase).toBe("Failed");
    expect(
      planConflictMark(squat({ uid: "any", created: "2026-12-01T10:09:30Z" }), old, NOW),
    ).toBeUndefined();
  });
});

describe("markRecordedConflicts", () => {
  const patches: Array<{
    path: string;
    body: { metadata?: { resourceVersion?: string }; status?: unknown };
  }> = [];
  let refuse = false;
  let server: Server;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => {
        text += chunk;
      });
      req.on("end", () => {
        if (req.method === "PATCH") patches.push({ path: req.url ?? "", body: JSON.parse(text) });
        const code = refuse ? 409 : 200;
        res.writeHead(code, { "Content-Type": "application/json" });
        res.end(
          JSON.stringify(
            refuse
              ? { kind: "Status", apiVersion: "v1", status: "Failure", reason: "Conflict", code }
              : squat(),
          ),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function sweepDeps(cached: Approval[]) {
    const world = createInMemoryWorld();
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [
        {
          name: "c",
          server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: "controller", token: "t" }],
      contexts: [{ name: "c", cluster: "c", user: "controller" }],
      currentContext: "c",
    });
    const caches = {
      approvals: {
        get: (name: string, namespace?: string) =>
          cached.find((a) => a.metadata.name === name && a.metadata.namespace === namespace),
      },
    } as unknown as Caches;
    return { world, deps: { core: world.deps, caches, clients: makeClients(config), now: () => NOW } };
  }

  it("marks the squat once per sweep, guarded by the resourceVersion it read", async () => {
    patches.length = 0;
    refuse = false;
    const { world, deps } = sweepDeps([squat()]);
    const payload = { session: "plant-a/s1", approval: `plant-a/${NAME}`, approvalUid: "squat-uid" };
    await world.deps.audit.append(record(payload));
    await world.deps.audit.append(record(payload, RECORDED_AT + 1));
    expect(await markRecordedConflicts(deps, quiet)).toBe(1);
    expect(patches).toHaveLength(1);
    expect(patches[0]?.path).toBe(`/apis/gatehouse.dev/v1alpha1/namespaces/plant-a/approvals/${NAME}/status`);
    expect(patches[0]?.body.metadata?.resourceVersion).toBe("7");
    expect(patches[0]?.body.status).toMatchObject({ phase: "Failed" });
  });

  it("leaves a write refused with 409 to the next sweep", async () => {
    patches.length = 0;
    refuse = true;
    const { world, deps } = sweepDeps([squat()]);
    await world.deps.audit.append(record({ approval: `plant-a/${NAME}`, approvalUid: "squat-uid" }));
    expect(await markRecordedConflicts(deps, quiet)).toBe(0);
    expect(patches).toHaveLength(1);
  });

  it("reads no record older than the look-back", async () => {
    patches.length = 0;
    refuse = false;
    const { world, deps } = sweepDeps([squat()]);
    const old = NOW.getTime() * 1000 - CONFLICT_LOOK_BACK_MS * 1000 - 1;
    await world.deps.audit.append(record({ approval: `plant-a/${NAME}`, approvalUid: "squat-uid" }, old));
    expect(await markRecordedConflicts(deps, quiet)).toBe(0);
    expect(patches).toEqual([]);
  });
});
