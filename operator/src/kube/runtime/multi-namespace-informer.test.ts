import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { InformerEvent, ObjectCache, ObjectHandler } from "./informer.ts";
import { MultiNamespaceInformer } from "./multi-namespace-informer.ts";

/** One namespace's cache in memory: `put` announces an add, `release` ends the first list. */
class NamespaceCache implements ObjectCache<KubernetesObject> {
  readonly objects = new Map<string, KubernetesObject>();
  readonly handlers: ObjectHandler<KubernetesObject>[] = [];
  started = false;
  stopped = false;
  release: () => void = () => {};
  private readonly synced = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  readonly namespace: string;

  constructor(namespace: string) {
    this.namespace = namespace;
  }

  put(name: string): KubernetesObject {
    const object = { metadata: { name, namespace: this.namespace } };
    this.objects.set(name, object);
    for (const handler of this.handlers) handler(object, "add");
    return object;
  }
  onChange(handler: ObjectHandler<KubernetesObject>): () => void {
    this.handlers.push(handler);
    return () => this.handlers.splice(this.handlers.indexOf(handler), 1);
  }
  start(): Promise<void> {
    this.started = true;
    return this.synced;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
  get(name: string, namespace?: string): KubernetesObject | undefined {
    return namespace === this.namespace ? this.objects.get(name) : undefined;
  }
  list(namespace?: string): KubernetesObject[] {
    return namespace === undefined || namespace === this.namespace ? [...this.objects.values()] : [];
  }
  /** One index, "name": the object's name. */
  byIndex(name: string, value: string): KubernetesObject[] {
    if (name !== "name") throw new Error(`no index named ${name}`);
    const object = this.objects.get(value);
    return object ? [object] : [];
  }
}

function informerOver(namespaces: string[]) {
  const caches = new Map<string, NamespaceCache>();
  const informer = new MultiNamespaceInformer<KubernetesObject>(namespaces, (ns) => {
    const cache = new NamespaceCache(ns);
    caches.set(ns, cache);
    return cache;
  });
  return { informer, caches, cache: (ns: string) => caches.get(ns)! };
}

const names = (objects: KubernetesObject[]) =>
  objects.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);

describe("MultiNamespaceInformer", () => {
  it("reads an object from the cache of its namespace", () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    const pod = cache("team-b").put("agent-1");
    expect(informer.get("agent-1", "team-b")).toBe(pod);
    expect(informer.get("agent-1", "team-a")).toBeUndefined();
  });

  it("finds nothing in a namespace it does not watch, nor without a namespace", () => {
    const { informer, cache } = informerOver(["team-a"]);
    cache("team-a").put("agent-1");
    expect(informer.get("agent-1", "elsewhere")).toBeUndefined();
    expect(informer.get("agent-1")).toBeUndefined();
    expect(informer.list("elsewhere")).toEqual([]);
  });

  it("lists one namespace's objects, or every watched namespace's", () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    cache("team-a").put("a-1");
    cache("team-b").put("b-1");
    cache("team-b").put("b-2");
    expect(names(informer.list("team-b"))).toEqual(["team-b/b-1", "team-b/b-2"]);
    expect(names(informer.list()).sort()).toEqual(["team-a/a-1", "team-b/b-1", "team-b/b-2"]);
  });

  it("announces every namespace's changes to each handler", () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    const seen: string[] = [];
    informer.onChange((o, event: InformerEvent) =>
      seen.push(`${event} ${o.metadata?.namespace}/${o.metadata?.name}`),
    );
    cache("team-a").put("a-1");
    cache("team-b").put("b-1");
    expect(seen).toEqual(["add team-a/a-1", "add team-b/b-1"]);
  });

  it("stops announcing to a handler once its subscription is removed, in every namespace", () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    const seen: string[] = [];
    const remove = informer.onChange((o) => seen.push(`${o.metadata?.namespace}/${o.metadata?.name}`));
    cache("team-a").put("a-1");
    remove();
    cache("team-a").put("a-2");
    cache("team-b").put("b-1");
    expect(seen).toEqual(["team-a/a-1"]);
  });

  it("looks an index value up in every namespace's cache", () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    cache("team-a").put("shared");
    cache("team-b").put("shared");
    cache("team-b").put("other");
    expect(names(informer.byIndex("name", "shared")).sort()).toEqual(["team-a/shared", "team-b/shared"]);
  });

  it("is synced only once every namespace's first list is", async () => {
    const { informer, cache } = informerOver(["team-a", "team-b"]);
    let synced = false;
    const started = informer.start().then(() => {
      synced = true;
    });
    expect(cache("team-a").started && cache("team-b").started).toBe(true);
    cache("team-a").release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(synced).toBe(false);
    cache("team-b").release();
    await started;
    expect(synced).toBe(true);
  });

  it("stops every namespace's cache", async () => {
    const { informer, caches } = informerOver(["team-a", "team-b"]);
    await informer.stop();
    expect([...caches.values()].map((c) => c.stopped)).toEqual([true, true]);
  });

  it("watches a namespace listed twice once, and refuses an empty list", () => {
    const { informer, caches } = informerOver(["team-a", "team-a"]);
    expect(informer.namespaces).toEqual(["team-a"]);
    expect(caches.size).toBe(1);
    expect(() => new MultiNamespaceInformer([], (ns) => new NamespaceCache(ns))).toThrow(
      /at least one namespace/,
    );
  });
});
