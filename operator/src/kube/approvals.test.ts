/**
 * The Approval port writes no status: the gateway runs it and may patch none (its role grants no
 * `approvals/status`). Told over HTTP by a stand-in API server that records every request and answers
 * a create with 409 and a read with a squat — the path that used to mark it Failed.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Approval } from "../api/kinds.ts";
import type { ApprovalRequest } from "../core/ports.ts";
import { approvalSpecOf, kubeApprovalPort } from "./approvals.ts";
import type { Caches } from "./runtime/caches.ts";
import { makeClients } from "./runtime/client.ts";

const request: ApprovalRequest = {
  namespace: "plant-a",
  name: "apr-0123456789abcdef0123",
  executionId: "0123456789abcdef0123".repeat(2),
  sessionRef: { name: "s1", uid: "uid-1" },
  capability: "aps-schedule-publish",
  capabilityId: "aps.schedule.publish",
  providerRef: { namespace: "plant-a", name: "aps" },
  arguments: '{"planId":"P-7"}',
  argumentsDigest: "a".repeat(64),
  schemaDigest: "b".repeat(64),
  requester: { user: "alice", groups: [] },
  approvers: { users: [], groups: [] },
  requiredApprovals: 1,
  allowSelfApproval: false,
  expiresAt: "2026-12-01T11:00:00Z",
  autoExecution: true,
};

/** Someone else's Approval under the call's name: not owned by the session. */
const squat: Approval = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "Approval",
  metadata: { name: request.name, namespace: request.namespace, uid: "squat-uid", resourceVersion: "5" },
  spec: approvalSpecOf(request),
};

const seen: Array<{ method: string; path: string }> = [];
let server: Server;

function reply(req: IncomingMessage): { code: number; body: unknown } {
  if (req.method === "POST") {
    return {
      code: 409,
      body: { kind: "Status", apiVersion: "v1", status: "Failure", reason: "AlreadyExists", code: 409 },
    };
  }
  if (req.method === "GET") return { code: 200, body: squat };
  return { code: 403, body: { kind: "Status", apiVersion: "v1", status: "Failure", code: 403 } };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", path: req.url ?? "" });
    req.resume();
    req.on("end", () => {
      const { code, body } = reply(req);
      res.writeHead(code, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function port() {
  const config = new KubeConfig();
  const { port: listening } = server.address() as AddressInfo;
  config.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${listening}`, skipTLSVerify: true }],
    users: [{ name: "gateway", token: "t" }],
    contexts: [{ name: "c", cluster: "c", user: "gateway" }],
    currentContext: "c",
  });
  return kubeApprovalPort(makeClients(config), {} as Caches);
}

describe("the kube Approval port", () => {
  it("reads a squat on create and writes nothing to its status", async () => {
    seen.length = 0;
    const handle = await port().createOrGet({ ...request, autoExecution: undefined });
    expect(handle.ownedBySession).toBe(false);
    expect(handle.uid).toBe("squat-uid");
    expect(seen.map((r) => r.method)).toEqual(["POST", "GET"]);
    expect(seen.filter((r) => r.path.includes("/status"))).toEqual([]);
  });

  it("creates or reads an Auto execution's record without moving its phase", async () => {
    seen.length = 0;
    const { handle, created } = await port().createOrGetRecord(request);
    expect(created).toBe(false);
    expect(handle.ownedBySession).toBe(false);
    expect(seen.map((r) => r.method)).toEqual(["POST", "GET"]);
    expect(seen.filter((r) => r.method === "PATCH" || r.path.includes("/status"))).toEqual([]);
  });

  it("reads a phase-less Auto record as Unknown, as the controller will mark it", async () => {
    const { handle } = await port().createOrGetRecord(request);
    expect(handle.phase).toBe("Unknown");
  });
});
