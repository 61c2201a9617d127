import type { KubernetesObject } from "@kubernetes/client-node";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Indexer, indexValue, NAMESPACE_INDEX, UnknownIndexError } from "./indexer.ts";

/** A test object: its owner uid and its tags are what the indexes file it under. */
interface Tagged extends KubernetesObject {
  metadata: { name: string; namespace: string; uid?: string };
  spec: { owner: string; tags: string[] };
}

const INDEXERS = {
  owner: (o: Tagged) => [indexValue(o.metadata.namespace, o.spec.owner)],
  tag: (o: Tagged) => o.spec.tags,
};

function tagged(namespace: string, name: string, owner: string, tags: string[] = []): Tagged {
  return { metadata: { name, namespace }, spec: { owner, tags } };
}

const names = (objects: Tagged[]) => objects.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();

describe("Indexer", () => {
  it("finds objects by an indexed value, scoped to their namespace", () => {
    const store = new Indexer<Tagged>(INDEXERS);
    store.upsert(tagged("a", "x", "s1"));
    store.upsert(tagged("a", "y", "s1"));
    store.upsert(tagged("b", "z", "s1"));
    expect(names(store.byIndex("owner", indexValue("a", "s1")))).toEqual(["a/x", "a/y"]);
    expect(names(store.byIndex("owner", indexValue("b", "s1")))).toEqual(["b/z"]);
  });

  it("moves an object to its new value when an update changes what it is indexed by", () => {
    const store = new Indexer<Tagged>(INDEXERS);
    store.upsert(tagged("a", "x", "s1", ["red"]));
    store.upsert(tagged("a", "x", "s2", ["blue"]));
    expect(store.byIndex("owner", indexValue("a", "s1"))).toEqual([]);
    expect(names(store.byIndex("owner", indexValue("a", "s2")))).toEqual(["a/x"]);
    expect(store.byIndex("tag", "red")).toEqual([]);
    expect(names(store.byIndex("tag", "blue"))).toEqual(["a/x"]);
  });

  it("forgets a deleted object in every index, the namespace index included", () => {
    const store = new Indexer<Tagged>(INDEXERS);
    const x = tagged("a", "x", "s1", ["red"]);
    store.upsert(x);
    expect(store.remove(x)).toBe(x);
    expect(store.byIndex("owner", indexValue("a", "s1"))).toEqual([]);
    expect(store.byIndex("tag", "red")).toEqual([]);
    expect(store.list("a")).toEqual([]);
    expect(store.size).toBe(0);
  });

  it("answers a relist with exactly the listed objects and returns what it held before", () => {
    const store = new Indexer<Tagged>(INDEXERS);
    store.upsert(tagged("a", "gone", "s1"));
    store.upsert(tagged("a", "kept", "s1"));
    const previous = store.replace([tagged("a", "kept", "s2"), tagged("a", "new", "s2")]);
    expect([...previous.keys()].sort()).toEqual(["a/gone", "a/kept"]);
    expect(store.byIndex("owner", indexValue("a", "s1"))).toEqual([]);
    expect(names(store.byIndex("owner", indexValue("a", "s2")))).toEqual(["a/kept", "a/new"]);
  });

  it("refuses a lookup in an index it was not built with", () => {
    expect(() => new Indexer<Tagged>(INDEXERS).byIndex("colour", "red")).toThrow(UnknownIndexError);
  });

  it("keeps every index equal to a scan of its objects through any adds, updates, deletes and relists", () => {
    const object = fc
      .record({
        namespace: fc.constantFrom("a", "b"),
        name: fc.constantFrom("n1", "n2", "n3", "n4"),
        owner: fc.constantFrom("s1", "s2", "s3"),
        tags: fc.uniqueArray(fc.constantFrom("red", "green", "blue"), { maxLength: 3 }),
      })
      .map((o) => tagged(o.namespace, o.name, o.owner, o.tags));
    const step = fc.oneof(
      object.map((o) => ({ op: "upsert" as const, o })),
      object.map((o) => ({ op: "remove" as const, o })),
      fc.array(object, { maxLength: 6 }).map((os) => ({ op: "replace" as const, os })),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const store = new Indexer<Tagged>(INDEXERS);
        const model = new Map<string, Tagged>();
        const key = (o: Tagged) => `${o.metadata.namespace}/${o.metadata.name}`;
        for (const s of steps) {
          if (s.op === "upsert") {
            store.upsert(s.o);
            model.set(key(s.o), s.o);
          } else if (s.op === "remove") {
            store.remove(s.o);
            model.delete(key(s.o));
          } else {
            store.replace(s.os);
            model.clear();
            for (const o of s.os) model.set(key(o), o);
          }
        }
        const all = [...model.values()];
        for (const ns of ["a", "b"]) {
          expect(names(store.list(ns))).toEqual(names(all.filter((o) => o.metadata.namespace === ns)));
          expect(names(store.byIndex(NAMESPACE_INDEX, ns))).toEqual(names(store.list(ns)));
          for (const owner of ["s1", "s2", "s3"]) {
            const wanted = all.filter((o) => o.metadata.namespace === ns && o.spec.owner === owner);
            expect(names(store.byIndex("owner", indexValue(ns, owner)))).toEqual(names(wanted));
          }
        }
        for (const tag of ["red", "green", "blue"]) {
          expect(names(store.byIndex("tag", tag))).toEqual(
            names(all.filter((o) => o.spec.tags.includes(tag))),
          );
        }
        expect(store.size).toBe(model.size);
      }),
    );
  });
});
