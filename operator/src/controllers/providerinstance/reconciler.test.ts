import type { V1EndpointSlice } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { podProblemOf, readyEndpoints } from "./plan.ts";

const SERVICE = { name: "prov-aps", uid: "svc-uid-1" };

/** A slice as the EndpointSlice controller keeps it for Service `service`, with `overrides` on top. */
const slice = (
  service: { name: string; uid: string },
  endpoints: Array<{ ip: string; ready?: boolean }>,
  overrides: { labels?: Record<string, string | undefined>; owners?: object[] } = {},
): V1EndpointSlice => ({
  addressType: "IPv4",
  metadata: {
    labels: Object.fromEntries(
      Object.entries({
        "kubernetes.io/service-name": service.name,
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        ...overrides.labels,
      }).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ),
    ownerReferences: (overrides.owners as never) ?? [
      { apiVersion: "v1", kind: "Service", name: service.name, uid: service.uid, controller: true },
    ],
  },
  ports: [{ name: "http", port: 8080 }],
  endpoints: endpoints.map((e) => ({ addresses: [e.ip], conditions: { ready: e.ready ?? true } })),
});

describe("readyEndpoints", () => {
  it("lists ready addresses of the service's slices only", () => {
    const slices = [
      slice(SERVICE, [{ ip: "10.88.0.9" }, { ip: "10.88.0.7", ready: false }]),
      slice({ name: "other", uid: "svc-uid-2" }, [{ ip: "10.88.0.3" }]),
    ];
    expect(readyEndpoints(slices, SERVICE, 8080)).toEqual(["http://10.88.0.9:8080"]);
  });

  it("ignores a slice with the service-name label that the EndpointSlice controller does not keep", () => {
    const genuine = slice(SERVICE, [{ ip: "10.88.0.9" }]);
    const forged = [
      // No manager label, as a hand-written slice has.
      slice(SERVICE, [{ ip: "10.99.0.66" }], {
        labels: { "endpointslice.kubernetes.io/managed-by": undefined },
      }),
      // Another manager: the mirroring controller copies hand-made Endpoints objects.
      slice(SERVICE, [{ ip: "10.99.0.67" }], {
        labels: { "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io" },
      }),
      // The right labels, but no owner, or an owner that is not this Service (an earlier one of its name).
      slice(SERVICE, [{ ip: "10.99.0.68" }], { owners: [] }),
      slice(SERVICE, [{ ip: "10.99.0.69" }], {
        owners: [{ apiVersion: "v1", kind: "Service", name: "prov-aps", uid: "old-uid", controller: true }],
      }),
      slice(SERVICE, [{ ip: "10.99.0.70" }], {
        owners: [{ apiVersion: "v1", kind: "Service", name: "prov-aps", uid: SERVICE.uid }],
      }),
    ];
    expect(readyEndpoints([genuine, ...forged], SERVICE, 8080)).toEqual(["http://10.88.0.9:8080"]);
    expect(readyEndpoints(forged, SERVICE, 8080)).toEqual([]);
    // A Service whose uid is not known yet matches no slice.
    expect(readyEndpoints([genuine], { name: SERVICE.name, uid: "" }, 8080)).toEqual([]);
  });
});

describe("podProblemOf", () => {
  const pod = (state: object) => ({
    metadata: { name: "prov-aps-1" },
    status: { containerStatuses: [{ name: "provider", state }] },
  });

  it("names a waiting container's reason and message", () => {
    const problem = podProblemOf([
      pod({
        waiting: { reason: "ImageNotInMap", message: "image example.com/x:1 is not one of this node's" },
      }),
    ] as never);
    expect(problem).toBe(
      " pod prov-aps-1, container provider waits: ImageNotInMap (image example.com/x:1 is not one of this node's).",
    );
  });

  it("names an ended container's exit code, and says nothing while containers are only being created", () => {
    expect(podProblemOf([pod({ terminated: { reason: "Error", exitCode: 1 } })] as never)).toMatch(
      /exit code 1/,
    );
    expect(podProblemOf([pod({ waiting: { reason: "ContainerCreating" } })] as never)).toBe("");
    expect(podProblemOf([])).toBe("");
  });
});

describe("podProblemOf during a rollout", () => {
  const pod = (name: string, hash: string, created: string, waiting: object) => ({
    metadata: { name, labels: { "pod-template-hash": hash }, creationTimestamp: created },
    status: { containerStatuses: [{ name: "provider", state: { waiting } }] },
  });
  const old = pod("prov-erp-5d9f-a", "5d9f", "2026-11-29T10:00:00Z", {
    reason: "ImageNotInMap",
    message: "image provider-erp:nope is not one of this node's",
  });
  const crashing = (name: string, created: string) =>
    pod(name, "7c4b", created, { reason: "CrashLoopBackOff", message: "back-off 10s restarting" });

  it("describes the newest ReplicaSet's pods, not an older one's still waiting beside them", () => {
    const problem = podProblemOf([old, crashing("prov-erp-7c4b-x", "2026-11-29T10:05:00Z")] as never);
    expect(problem).toBe(
      " pod prov-erp-7c4b-x, container provider waits: CrashLoopBackOff (back-off 10s restarting).",
    );
  });

  it("names each distinct reason once, from the newest pod that shows it", () => {
    const pulling = pod("prov-erp-7c4b-z", "7c4b", "2026-11-29T10:04:00Z", { reason: "ImagePullBackOff" });
    const problem = podProblemOf([
      crashing("prov-erp-7c4b-x", "2026-11-29T10:05:00Z"),
      pulling,
      crashing("prov-erp-7c4b-y", "2026-11-29T10:06:00Z"),
      old,
    ] as never);
    expect(problem).toBe(
      " pod prov-erp-7c4b-y, container provider waits: CrashLoopBackOff (back-off 10s restarting)." +
        " pod prov-erp-7c4b-z, container provider waits: ImagePullBackOff.",
    );
  });
});
