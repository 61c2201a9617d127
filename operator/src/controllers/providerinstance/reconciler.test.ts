import type { V1EndpointSlice } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { readyEndpoints } from "./reconciler.ts";

const slice = (service: string, endpoints: Array<{ ip: string; ready?: boolean }>): V1EndpointSlice => ({
  addressType: "IPv4",
  metadata: { labels: { "kubernetes.io/service-name": service } },
  ports: [{ name: "http", port: 8080 }],
  endpoints: endpoints.map((e) => ({ addresses: [e.ip], conditions: { ready: e.ready ?? true } })),
});

describe("readyEndpoints", () => {
  it("lists ready addresses of the service's slices only", () => {
    const slices = [
      slice("prov-aps", [{ ip: "10.88.0.9" }, { ip: "10.88.0.7", ready: false }]),
      slice("other", [{ ip: "10.88.0.3" }]),
    ];
    expect(readyEndpoints(slices, "prov-aps", 8080)).toEqual(["http://10.88.0.9:8080"]);
  });
});
