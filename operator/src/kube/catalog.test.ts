import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Capability, ProviderInstance } from "../api/kinds.ts";
import { GATEHOUSE_INDEXERS } from "./cache-indexes.ts";
import { cacheCatalog, visibleCapabilities } from "./catalog.ts";
import type { Caches } from "./runtime/caches.ts";
import { staticCache } from "./runtime/static-cache.ts";

type Cached<T> = T & KubernetesObject;

function capability(namespace: string, name: string, id: string): Cached<Capability> {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Capability",
    metadata: { name, namespace, uid: `${namespace}-${name}` },
    spec: { id, providerRef: { name: "aps" } },
    status: { conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "" }] },
  } as unknown as Cached<Capability>;
}

function cachesOf(capabilities: Cached<Capability>[]): Caches {
  return {
    capabilities: staticCache(capabilities, GATEHOUSE_INDEXERS.capabilities),
    providers: staticCache([] as Cached<ProviderInstance>[]),
  } as unknown as Caches;
}

describe("the cache catalog", () => {
  it("resolves a tool name to the Capability of that id in the caller's namespace only", async () => {
    const catalog = cacheCatalog(
      cachesOf([
        capability("plant-a", "publish", "aps.schedule.publish"),
        capability("plant-b", "read", "aps.schedule.read"),
      ]),
    );
    expect((await catalog.resolve("plant-a", "aps_schedule_publish"))?.name).toBe("publish");
    expect(await catalog.resolve("plant-a", "aps_schedule_read")).toBeUndefined();
  });

  it("is not ready when another Capability of its namespace has its tool name, whatever a namespace beside it holds", async () => {
    const catalog = cacheCatalog(
      cachesOf([
        capability("plant-a", "publish", "aps.schedule.publish"),
        capability("plant-a", "publish-too", "aps.schedule.publish"),
        capability("plant-b", "publish", "aps.schedule.publish"),
      ]),
    );
    expect(await catalog.get("plant-a", "publish")).toMatchObject({
      ready: false,
      notReadyReason: "DuplicateId",
    });
    expect(await catalog.get("plant-b", "publish")).toMatchObject({ ready: true });
  });

  it("shows a session the Capabilities it names that exist, each once and by name, else its whole namespace", () => {
    const caches = cachesOf([
      capability("plant-a", "read", "aps.schedule.read"),
      capability("plant-a", "publish", "aps.schedule.publish"),
      capability("plant-a", "other", "aps.other"),
      capability("plant-b", "gone", "aps.gone"),
    ]);
    const names = (list: Capability[]) => list.map((c) => c.metadata.name);
    expect(names(visibleCapabilities(caches, "plant-a", ["read", "publish", "read", "gone"]))).toEqual([
      "publish",
      "read",
    ]);
    expect(names(visibleCapabilities(caches, "plant-a", undefined))).toEqual(["other", "publish", "read"]);
  });
});
