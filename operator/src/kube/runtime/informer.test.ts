import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { LAST_APPLIED_ANNOTATION, stripForCache } from "./cache-transform.ts";
import { indexValue } from "./indexer.ts";
import { Informer, type InformerEvent } from "./informer.ts";

interface Owned extends KubernetesObject {
  metadata: KubernetesObject["metadata"] & { name: string; namespace: string };
  spec: { owner: string };
}

/** An informer that is never started: objects reach it through the list and watch paths' own entry points. */
function informer() {
  return new Informer<Owned>(new KubeConfig(), {
    path: "/apis/example.dev/v1/owneds",
    log: pino({ level: "silent" }),
    resyncMs: 0,
    indexers: { owner: (o) => [indexValue(o.metadata.namespace, o.spec.owner)] },
    transform: stripForCache,
  });
}

function owned(name: string, owner: string, resourceVersion = "1"): Owned {
  return {
    metadata: {
      name,
      namespace: "a",
      resourceVersion,
      managedFields: [{ manager: "kubectl", operation: "Update" }],
      annotations: { [LAST_APPLIED_ANNOTATION]: "{}", team: "red" },
    },
    spec: { owner },
  };
}

const byOwner = (cache: Informer<Owned>, owner: string) =>
  cache.byIndex("owner", indexValue("a", owner)).map((o) => o.metadata.name);

describe("Informer", () => {
  it("caches watched objects without managedFields or the last-applied copy, other annotations kept", () => {
    const cache = informer();
    cache.apply("ADDED", owned("x", "s1"));
    const cached = cache.get("x", "a");
    expect(cached?.metadata.managedFields).toBeUndefined();
    expect(cached?.metadata.annotations).toEqual({ team: "red" });
  });

  it("keeps its indexes through watch events and a relist, announcing each change", () => {
    const cache = informer();
    const seen: string[] = [];
    cache.onChange((o, event: InformerEvent) => seen.push(`${event} ${o.metadata.name}`));
    cache.apply("ADDED", owned("x", "s1"));
    cache.apply("ADDED", owned("y", "s1"));
    cache.apply("MODIFIED", owned("x", "s2", "2"));
    expect(byOwner(cache, "s1")).toEqual(["y"]);
    expect(byOwner(cache, "s2")).toEqual(["x"]);
    cache.apply("DELETED", owned("y", "s1"));
    expect(byOwner(cache, "s1")).toEqual([]);
    cache.replaceWith([owned("x", "s3", "3"), owned("z", "s3")]);
    expect(byOwner(cache, "s2")).toEqual([]);
    expect(byOwner(cache, "s3").sort()).toEqual(["x", "z"]);
    expect(seen).toEqual(["add x", "add y", "update x", "delete y", "update x", "add z"]);
  });

  it("stops calling a handler whose subscription was removed, and calls the others", () => {
    const cache = informer();
    const first: string[] = [];
    const second: string[] = [];
    const remove = cache.onChange((o) => first.push(o.metadata.name));
    cache.onChange((o) => second.push(o.metadata.name));
    cache.apply("ADDED", owned("x", "s1"));
    remove();
    cache.apply("ADDED", owned("y", "s1"));
    expect(first).toEqual(["x"]);
    expect(second).toEqual(["x", "y"]);
  });
});
