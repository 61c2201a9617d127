import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession } from "../api/kinds.ts";
import { sessionForGateway } from "./session-cache.ts";

const served = (): AgentSession & KubernetesObject =>
  ({
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "AgentSession",
    metadata: {
      name: "push-plan",
      namespace: "plant-a",
      uid: "sess-uid",
      managedFields: [{ manager: "gatehouse-controller", operation: "Update", subresource: "status" }],
    },
    spec: {
      subject: { user: "alice", groups: [] },
      engine: "builtin",
      model: { name: "scripted/reference-story" },
      instructions: "Plan the week.",
      messages: [{ text: "Push the plan." }],
    },
    status: {
      phase: "Running",
      podName: "push-plan-agent-1",
      podUID: "pod-uid",
      continuations: 0,
      conditions: [
        {
          type: "PodReady",
          status: "True",
          reason: "AsExpected",
          message: "",
          lastTransitionTime: "2026-12-06T10:00:00Z",
        },
      ],
    },
  }) as unknown as AgentSession & KubernetesObject;

describe("the gateway's cached session", () => {
  it("keeps the spec and the status the gateway reads, without managedFields and the conditions", () => {
    const whole = served();
    const cached = sessionForGateway(served());
    expect(cached.spec).toEqual(whole.spec);
    expect(cached.metadata).toEqual({ ...whole.metadata, managedFields: undefined });
    const { conditions: _conditions, ...status } = whole.status!;
    expect(cached.status).toEqual(status);
  });

  it("takes a session without a status as it is", () => {
    const { status: _status, ...pending } = served();
    expect(
      sessionForGateway(structuredClone(pending) as AgentSession & KubernetesObject).status,
    ).toBeUndefined();
  });
});
