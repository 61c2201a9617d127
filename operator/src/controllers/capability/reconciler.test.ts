import { describe, expect, it } from "vitest";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { providerProblemOf } from "./reconciler.ts";

const capability = (providerRef: { name: string; namespace?: string }): Capability =>
  ({
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Capability",
    metadata: { name: "aps-read", namespace: "plant-a" },
    spec: { id: "aps.schedule.read", providerRef },
  }) as unknown as Capability;
const provider = (status: ProviderInstance["status"], spec: object = {}): ProviderInstance =>
  ({
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: { name: "aps", namespace: "plant-a" },
    spec,
    status,
  }) as unknown as ProviderInstance;
const ready = provider({
  conditions: [
    {
      type: "Ready",
      status: "True",
      reason: "ManifestFetched",
      message: "",
      lastTransitionTime: "2026-11-29T10:00:00Z",
    },
  ],
  endpoints: ["http://10.88.0.9:8080"],
});

describe("providerProblemOf", () => {
  it("refuses a providerRef in another namespace, naming the field and both fixes", () => {
    expect(providerProblemOf(capability({ name: "aps", namespace: "plant-b" }), ready)).toBe(
      "spec.providerRef.namespace plant-b: a Capability can only use a ProviderInstance of its own namespace (plant-a) for now; remove spec.providerRef.namespace or create the Capability in plant-b.",
    );
    expect(providerProblemOf(capability({ name: "aps", namespace: "plant-b" }), undefined)).toMatch(
      /^spec\.providerRef\.namespace plant-b:/,
    );
  });

  it("names spec.providerRef.name and the fix when no such ProviderInstance exists", () => {
    expect(providerProblemOf(capability({ name: "erp" }), undefined)).toBe(
      "spec.providerRef.name erp: no ProviderInstance erp in namespace plant-a; create it or fix the name.",
    );
  });

  it("says a disabled or not Ready provider is the cause, with its reason", () => {
    expect(
      providerProblemOf(capability({ name: "aps" }), provider(ready.status, { disabled: true })),
    ).toMatch(/is disabled \(spec\.disabled\)/);
    const waiting = provider({
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "NoReadyEndpoints",
          message: "",
          lastTransitionTime: "2026-11-29T10:00:00Z",
        },
      ],
    });
    expect(providerProblemOf(capability({ name: "aps" }), waiting)).toMatch(
      /^ProviderInstance aps is not Ready \(NoReadyEndpoints\)/,
    );
  });

  it("finds nothing wrong with a Ready provider of the same namespace, named explicitly or not", () => {
    expect(providerProblemOf(capability({ name: "aps" }), ready)).toBeUndefined();
    expect(providerProblemOf(capability({ name: "aps", namespace: "plant-a" }), ready)).toBeUndefined();
  });
});
