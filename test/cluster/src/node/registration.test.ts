import type { V1Node } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { NODE_STATUS_MS, nodeStatusDue } from "./registration.ts";

const now = new Date("2026-12-03T12:00:00Z");
const ready = { ready: true, since: new Date("2026-12-03T11:00:00Z") };

function nodeWith(condition: Record<string, unknown> | undefined): V1Node {
  return { status: { conditions: condition ? [condition as never] : [] } };
}

describe("nodeStatusDue", () => {
  it("posts nothing while the stored Ready is the node's own and its heartbeat is recent", () => {
    const heartbeat = new Date(now.getTime() - NODE_STATUS_MS + 1_000).toISOString();
    const node = nodeWith({
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      lastHeartbeatTime: heartbeat,
    });
    expect(nodeStatusDue(node, ready, now)).toBeUndefined();
  });

  it("posts at once when the node lifecycle controller has written Ready=Unknown", () => {
    const node = nodeWith({
      type: "Ready",
      status: "Unknown",
      reason: "NodeStatusUnknown",
      lastHeartbeatTime: now.toISOString(),
    });
    expect(nodeStatusDue(node, ready, now)).toBe("changed");
  });

  it("posts when the heartbeat is a report period old", () => {
    const heartbeat = new Date(now.getTime() - NODE_STATUS_MS).toISOString();
    const node = nodeWith({
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      lastHeartbeatTime: heartbeat,
    });
    expect(nodeStatusDue(node, ready, now)).toBe("heartbeat");
  });

  it("posts when the stored Node has no Ready condition", () => {
    expect(nodeStatusDue(nodeWith(undefined), ready, now)).toBe("changed");
  });

  it("posts a stopping node's Ready=False over a stored True", () => {
    const node = nodeWith({
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      lastHeartbeatTime: now.toISOString(),
    });
    expect(nodeStatusDue(node, { ready: false, since: now }, now)).toBe("changed");
  });
});
