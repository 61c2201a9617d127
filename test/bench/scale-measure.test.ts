import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CONTROLLER_USERNAME, GATEWAY_USERNAME } from "../../operator/src/api/well-known.ts";
import {
  growthPerSession,
  reconcilesPer,
  reconcileTotals,
  requestsByClient,
  requestsByClientIn,
} from "./scale-measure.ts";

/** One audit event as the API server writes it: compact JSON, one a line. */
function event(stage: string, username: string, at: string): string {
  return JSON.stringify({
    kind: "Event",
    apiVersion: "audit.k8s.io/v1",
    level: "Metadata",
    auditID: "x",
    stage,
    requestURI: "/api/v1/pods",
    verb: "list",
    user: { username, groups: ["system:authenticated"] },
    requestReceivedTimestamp: at,
    stageTimestamp: at,
  });
}

describe("what scale.ts reads about an installation", () => {
  it("counts the completed API requests of each client within the window, from the audit log", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "scale-measure-")), "audit.log");
    writeFileSync(
      path,
      [
        event("ResponseComplete", CONTROLLER_USERNAME, "2026-12-01T12:00:01.000001Z"),
        event("ResponseComplete", CONTROLLER_USERNAME, "2026-12-01T12:00:02.000000Z"),
        event("ResponseStarted", CONTROLLER_USERNAME, "2026-12-01T12:00:02.000000Z"),
        event("ResponseComplete", GATEWAY_USERNAME, "2026-12-01T12:00:03.000000Z"),
        event("ResponseComplete", "system:serviceaccount:kube-system:local-node", "2026-12-01T12:00:03.5Z"),
        event("ResponseComplete", "alice", "2026-12-01T12:00:04.000000Z"),
        event("ResponseComplete", "system:kube-scheduler", "2026-12-01T12:00:04.000000Z"),
        event("ResponseComplete", "system:kube-controller-manager", "2026-12-01T12:00:04.000000Z"),
        event("ResponseComplete", GATEWAY_USERNAME, "2026-12-01T12:00:09.000000Z"),
        "",
      ].join("\n"),
    );
    // A part the API server rotated out (100 MB): counted too, beside an unrelated file.
    writeFileSync(
      join(dirname(path), "audit-2026-12-01T12-00-04.500.log"),
      `${event("ResponseComplete", CONTROLLER_USERNAME, "2026-12-01T12:00:04.5Z")}\n`,
    );
    writeFileSync(join(dirname(path), "audit-policy.yaml"), "not a log\n");
    const from = Date.parse("2026-12-01T12:00:01.000Z");
    const to = Date.parse("2026-12-01T12:00:05.000Z");
    expect(await requestsByClient(path, from, to)).toEqual({
      controller: 3,
      gateway: 1,
      node: 1,
      benchmark: 1,
      scheduler: 1,
      kubernetesControllers: 1,
    });
    // Several windows in one pass: each counts its own requests.
    const later = Date.parse("2026-12-01T12:00:08.000Z");
    expect(
      await requestsByClientIn(path, [
        { fromMs: from, toMs: Date.parse("2026-12-01T12:00:02.500Z") },
        { fromMs: later, toMs: later + 5_000 },
      ]),
    ).toEqual([{ controller: 2 }, { gateway: 1 }]);
  });

  it("reads reconciles per controller from the controller's /metrics and divides their growth by sessions", async () => {
    const registry = new Registry();
    const total = new Counter({
      name: "gatehouse_reconcile_total",
      help: "h",
      labelNames: ["controller", "result"],
      registers: [registry],
    });
    const time = new Histogram({
      name: "gatehouse_reconcile_time_seconds",
      help: "h",
      labelNames: ["controller"],
      registers: [registry],
    });
    const scrape = async () => reconcileTotals(await registry.metrics());
    total.inc({ controller: "agentsession", result: "success" });
    time.observe({ controller: "agentsession" }, 0.01);
    const before = await scrape();
    total.inc({ controller: "agentsession", result: "success" }, 3);
    total.inc({ controller: "agentsession", result: "requeue" }, 1);
    for (let i = 0; i < 4; i++) time.observe({ controller: "agentsession" }, 0.02);
    total.inc({ controller: "approval", result: "success" }, 2);
    time.observe({ controller: "approval" }, 0.1);
    time.observe({ controller: "approval" }, 0.1);
    expect(reconcilesPer(before, await scrape(), 2)).toEqual({
      agentsession: { reconciles: 4, perSession: 2, msPerReconcile: 20 },
      approval: { reconciles: 2, perSession: 1, msPerReconcile: 100 },
    });
  });

  it("gives each table's growth per session and the totals, leaving out tables that did not grow", () => {
    const before = new Map([
      ["audit_log", { rows: 10, bytes: 8192 }],
      ["executions", { rows: 0, bytes: 8192 }],
    ]);
    const after = new Map([
      ["audit_log", { rows: 30, bytes: 16384 }],
      ["executions", { rows: 0, bytes: 8192 }],
      ["session_events", { rows: 4, bytes: 8192 }],
    ]);
    expect(growthPerSession(before, after, 2)).toEqual({
      rowsPerSession: 12,
      bytesPerSession: 8192,
      tables: {
        audit_log: { rows: 20, bytes: 8192, rowsPerSession: 10, bytesPerSession: 4096 },
        session_events: { rows: 4, bytes: 8192, rowsPerSession: 2, bytesPerSession: 4096 },
      },
    });
  });
});
