import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { LAST_APPLIED_ANNOTATION, stripForCache, without } from "./cache-transform.ts";

const served = (annotations?: Record<string, string>): KubernetesObject =>
  JSON.parse(
    JSON.stringify({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "m",
        namespace: "n",
        labels: { a: "b" },
        ...(annotations ? { annotations } : {}),
        finalizers: ["f"],
        managedFields: [{ manager: "kubectl", operation: "Apply" }],
      },
      data: { k: "v" },
    }),
  );

describe("stripForCache", () => {
  it("drops managedFields and keeps every other field in its place", () => {
    const stripped = stripForCache(served({ note: "x" }));
    expect(stripped.metadata).toEqual({
      name: "m",
      namespace: "n",
      labels: { a: "b" },
      annotations: { note: "x" },
      finalizers: ["f"],
    });
    expect(Object.keys(stripped.metadata!)).toEqual([
      "name",
      "namespace",
      "labels",
      "annotations",
      "finalizers",
    ]);
    expect((stripped as unknown as { data: object }).data).toEqual({ k: "v" });
  });

  it("drops the last-applied annotation, and the annotations when it was the only one", () => {
    const applied = JSON.stringify({ kind: "ConfigMap" });
    expect(
      stripForCache(served({ [LAST_APPLIED_ANNOTATION]: applied, note: "x" })).metadata?.annotations,
    ).toEqual({
      note: "x",
    });
    const alone = stripForCache(served({ [LAST_APPLIED_ANNOTATION]: applied })).metadata!;
    expect("annotations" in alone).toBe(false);
    expect(Object.keys(alone)).toEqual(["name", "namespace", "labels", "finalizers"]);
  });

  it("returns an object with neither as it is", () => {
    const object = { metadata: { name: "m", annotations: { note: "x" } } };
    const metadata = object.metadata;
    expect(stripForCache(object).metadata).toBe(metadata);
  });
});

describe("without", () => {
  it("copies an object but one key, sharing the values, and returns one without the key as it is", () => {
    const value = { deep: true };
    const object = { a: 1, b: value, c: "x" };
    const copy = without(object, "a");
    expect(copy).toEqual({ b: value, c: "x" });
    expect(copy.b).toBe(value);
    expect(object).toEqual({ a: 1, b: value, c: "x" });
    const other: { a?: number; c: string } = { c: "x" };
    expect(without(other, "a")).toBe(other);
  });
});
