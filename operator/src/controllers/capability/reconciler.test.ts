import { describe, expect, it } from "vitest";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { duplicatesOf } from "../../kube/catalog.ts";
import {
  capabilityDisabledMessage,
  duplicateMessage,
  providerDisabled,
  providerDisabledMessage,
  providerProblemOf,
} from "./plan.ts";

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
    expect(providerProblemOf(capability({ name: "aps" }), provider(ready.status, { disabled: true }))).toBe(
      providerDisabledMessage("aps", "plant-a"),
    );
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

describe("duplicate tool names", () => {
  const named = (name: string, id: string, namespace = "plant-a"): Capability =>
    ({
      apiVersion: "gatehouse.dev/v1alpha1",
      kind: "Capability",
      metadata: { name, namespace },
      spec: { id, providerRef: { name: "aps" } },
    }) as unknown as Capability;
  const read = named("aps-read", "aps.schedule.read");

  it("finds the other Capabilities of the namespace with the same id, or an id that meets it in one tool name", () => {
    const all = [
      read,
      named("aps-read-copy", "aps.schedule.read"),
      named("aps-read-underscore", "aps.schedule_read"),
      named("aps-read-elsewhere", "aps.schedule.read", "plant-b"),
      named("aps-publish", "aps.schedule.publish"),
    ];
    expect(duplicatesOf(all, read)).toEqual(["aps-read-copy", "aps-read-underscore"]);
    expect(duplicatesOf(all, named("aps-publish", "aps.schedule.publish"))).toEqual([]);
  });

  it("names the clashing Capabilities, the tool and the fix", () => {
    expect(duplicateMessage(read, ["aps-read-copy"])).toBe(
      "Capability aps-read-copy in this namespace also defines the tool aps_schedule_read (spec.id aps.schedule.read): none of them is offered until all but one are renamed or deleted.",
    );
  });
});

describe("a disabled Capability or provider", () => {
  const disabledProvider = provider(ready.status, { disabled: true });

  it("counts as Disabled when the Capability's own-namespace provider has spec.disabled", () => {
    expect(providerDisabled(capability({ name: "aps" }), disabledProvider)).toBe(true);
    expect(providerDisabled(capability({ name: "aps" }), ready)).toBe(false);
    expect(providerDisabled(capability({ name: "aps" }), undefined)).toBe(false);
  });

  it("is not Disabled but in the wrong namespace when the providerRef points elsewhere", () => {
    expect(providerDisabled(capability({ name: "aps", namespace: "plant-b" }), disabledProvider)).toBe(false);
  });

  it("says which spec.disabled to unset, and the command that does it", () => {
    expect(providerDisabledMessage("aps", "plant-a")).toBe(
      `ProviderInstance aps is disabled (spec.disabled), so this capability is not offered and new calls are refused; to offer it again, unset it: kubectl patch providerinstance aps -n plant-a --type merge -p '{"spec":{"disabled":null}}'.`,
    );
    expect(capabilityDisabledMessage(capability({ name: "aps" }))).toMatch(
      /^spec\.disabled is set, so this capability is not offered .*kubectl patch capability aps-read -n plant-a --type merge -p '\{"spec":\{"disabled":null\}\}'/,
    );
  });
});
