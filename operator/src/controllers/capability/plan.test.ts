/**
 * The capability reconciler without a cluster: planCapability over every reason its Ready condition
 * can have and the transitions between them (tables), and the applier over the in-memory writer,
 * counting what one pass writes.
 */
import type { CapabilityOffer, Manifest } from "@gatehouse/provider-sdk";
import { schemaDigest } from "@gatehouse/provider-sdk";
import type { Logger } from "pino";
import { describe, expect, it } from "vitest";
import type { Condition } from "../../api/common.ts";
import type { Capability, ProviderInstance } from "../../api/kinds.ts";
import { inMemoryCapabilityWriter } from "./in-memory-writer.ts";
import {
  type CapabilityPlanInput,
  type CapabilityStatus,
  capabilityDisabledMessage,
  manifestEndpointOf,
  NOT_READY_RECHECK_MS,
  planCapability,
  providerDisabledMessage,
} from "./plan.ts";
import { applyCapability, readManifest } from "./reconciler.ts";

const NOW = new Date("2026-12-01T10:00:00Z");
const BEFORE = "2026-11-29T10:00:00Z";
const ENDPOINT = "http://10.88.0.9:8080";
const quiet = { info() {}, warn() {}, error() {} } as unknown as Logger;

function capabilityOf(
  options: {
    name?: string;
    id?: string;
    providerRef?: { name: string; namespace?: string };
    disabled?: boolean;
    status?: CapabilityStatus;
    deleting?: boolean;
  } = {},
): Capability {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Capability",
    metadata: {
      name: options.name ?? "aps-read",
      namespace: "plant-a",
      generation: 3,
      resourceVersion: "7",
      ...(options.deleting ? { deletionTimestamp: "2026-12-01T09:59:00Z" } : {}),
    },
    spec: {
      id: options.id ?? "aps.schedule.read",
      providerRef: options.providerRef ?? { name: "aps" },
      ...(options.disabled ? { disabled: true } : {}),
    },
    ...(options.status ? { status: options.status } : {}),
  } as unknown as Capability;
}

function providerOf(
  options: {
    disabled?: boolean;
    placement?: "Shared" | "Sidecar";
    ready?: "True" | "False";
    endpoints?: string[];
  } = {},
): ProviderInstance {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: { name: "aps", namespace: "plant-a" },
    spec: {
      type: "aps",
      image: "aps:1",
      placement: options.placement ?? "Shared",
      ...(options.disabled ? { disabled: true } : {}),
    },
    status: {
      conditions: [
        {
          type: "Ready",
          status: options.ready ?? "True",
          reason: options.ready === "False" ? "NoReadyEndpoints" : "ManifestFetched",
          message: "",
          lastTransitionTime: BEFORE,
        },
      ],
      endpoints: options.endpoints ?? [ENDPOINT],
    },
  } as unknown as ProviderInstance;
}

const OBJECT = { type: "object", properties: { planId: { type: "string" } } };

function offerOf(overrides: Partial<CapabilityOffer> = {}): CapabilityOffer {
  return {
    id: "aps.schedule.read",
    description: "Reads the schedule.",
    effect: "read",
    mode: "sync",
    idempotency: "natural",
    inputSchema: OBJECT,
    outputSchema: OBJECT,
    ...overrides,
  };
}

function manifestOf(...offers: CapabilityOffer[]): Manifest {
  return { provider: "aps", version: "1.4.0", requiresIdentity: false, capabilities: offers };
}

/** A pass over `capability` with a Ready provider offering the read, unless told otherwise. */
function inputOf(capability: Capability, overrides: Partial<CapabilityPlanInput> = {}): CapabilityPlanInput {
  return {
    capability,
    provider: providerOf(),
    manifest: { manifest: manifestOf(offerOf()) },
    capabilities: [capability],
    now: NOW,
    ...overrides,
  };
}

/** A status whose Ready condition is `status`/`reason` since BEFORE. */
function statusWith(
  status: "True" | "False",
  reason: string,
  rest: Partial<CapabilityStatus> = {},
): CapabilityStatus {
  return {
    ...rest,
    conditions: [{ type: "Ready", status, reason, message: "", lastTransitionTime: BEFORE }],
  };
}

const readyOf = (status: CapabilityStatus | undefined): Condition | undefined =>
  status?.conditions?.find((c) => c.type === "Ready");

describe("planCapability: the reasons of Ready", () => {
  const read = capabilityOf();
  const publish = capabilityOf({ name: "aps-publish", id: "aps.schedule.publish" });
  const write = offerOf({ id: "aps.schedule.publish", effect: "write", idempotency: "key" });
  const rows: Array<{
    name: string;
    input: CapabilityPlanInput;
    status: "True" | "False";
    reason: string;
    /** Key words of the message, each contained in it. */
    words: string[];
    /** Log lines, as "level/message". */
    log?: string[];
  }> = [
    {
      name: "Offered: a Ready provider offers the id",
      input: inputOf(read),
      status: "True",
      reason: "Offered",
      words: ["Offered by aps 1.4.0 as read"],
    },
    {
      name: "Offered: a write on a Shared provider",
      input: inputOf(publish, { manifest: { manifest: manifestOf(write) } }),
      status: "True",
      reason: "Offered",
      words: ["Offered by aps 1.4.0 as write"],
    },
    {
      name: "Offered: a read on a Sidecar provider",
      input: inputOf(read, { provider: providerOf({ placement: "Sidecar" }) }),
      status: "True",
      reason: "Offered",
      words: ["as read"],
    },
    {
      name: "Offered: a stronger effect than first observed is no EffectChanged (read → write)",
      input: inputOf(capabilityOf({ status: { observedEffect: "read" } }), {
        manifest: { manifest: manifestOf(offerOf({ effect: "write" })) },
      }),
      status: "True",
      reason: "Offered",
      words: ["as write"],
    },
    {
      name: "NotOffered: the manifest has no such id",
      input: inputOf(read, { manifest: { manifest: manifestOf(write) } }),
      status: "False",
      reason: "NotOffered",
      words: ["Provider aps 1.4.0", "does not offer aps.schedule.read"],
    },
    {
      name: "ProviderNotReady: no such ProviderInstance",
      input: inputOf(read, { provider: undefined, manifest: undefined }),
      status: "False",
      reason: "ProviderNotReady",
      words: ["spec.providerRef.name aps", "no ProviderInstance aps in namespace plant-a", "fix the name"],
    },
    {
      name: "ProviderNotReady: a providerRef in another namespace (not supported yet)",
      input: inputOf(capabilityOf({ providerRef: { name: "aps", namespace: "plant-b" } }), {
        manifest: undefined,
      }),
      status: "False",
      reason: "ProviderNotReady",
      words: ["spec.providerRef.namespace plant-b", "its own namespace (plant-a)"],
    },
    {
      name: "ProviderNotReady, not Disabled: a disabled provider in another namespace",
      input: inputOf(capabilityOf({ providerRef: { name: "aps", namespace: "plant-b" } }), {
        provider: providerOf({ disabled: true }),
        manifest: undefined,
      }),
      status: "False",
      reason: "ProviderNotReady",
      words: ["spec.providerRef.namespace plant-b"],
    },
    {
      name: "ProviderNotReady: the provider is not Ready",
      input: inputOf(read, { provider: providerOf({ ready: "False", endpoints: [] }), manifest: undefined }),
      status: "False",
      reason: "ProviderNotReady",
      words: [
        "ProviderInstance aps is not Ready (NoReadyEndpoints)",
        "kubectl describe providerinstance aps",
      ],
    },
    {
      name: "ProviderNotReady: the provider says Ready but has no endpoint",
      input: inputOf(read, { provider: providerOf({ endpoints: [] }), manifest: undefined }),
      status: "False",
      reason: "ProviderNotReady",
      words: ["ProviderInstance aps is not Ready (ManifestFetched)"],
    },
    {
      name: "ProviderNotReady: the manifest could not be read (logged)",
      input: inputOf(read, { manifest: { error: "connect ECONNREFUSED 10.88.0.9:8080" } }),
      status: "False",
      reason: "ProviderNotReady",
      words: ["The provider's manifest could not be read: connect ECONNREFUSED 10.88.0.9:8080"],
      log: ["warn/manifest fetch failed"],
    },
    {
      name: "Disabled: its ProviderInstance has spec.disabled",
      input: inputOf(read, { provider: providerOf({ disabled: true }), manifest: undefined }),
      status: "False",
      reason: "Disabled",
      words: ["ProviderInstance aps is disabled", "kubectl patch providerinstance aps -n plant-a"],
    },
    {
      name: "Disabled: the Capability has spec.disabled, though the provider offers it",
      input: inputOf(capabilityOf({ disabled: true })),
      status: "False",
      reason: "Disabled",
      words: ["spec.disabled is set", "kubectl patch capability aps-read -n plant-a"],
    },
    {
      name: "Disabled: the Capability's spec.disabled wins over DuplicateId and ProviderNotReady",
      input: inputOf(capabilityOf({ disabled: true }), {
        provider: undefined,
        manifest: undefined,
        capabilities: [capabilityOf({ name: "aps-read-copy" })],
      }),
      status: "False",
      reason: "Disabled",
      words: ["spec.disabled is set"],
    },
    {
      name: "InvalidSchema: an array without items",
      input: inputOf(read, {
        manifest: {
          manifest: manifestOf(
            offerOf({ inputSchema: { type: "object", properties: { ids: { type: "array" } } } }),
          ),
        },
      }),
      status: "False",
      reason: "InvalidSchema",
      words: ["The provider's schemas for aps.schedule.read cannot be used", "must declare its items"],
    },
    {
      name: "InvalidSchema: arguments that are not an object",
      input: inputOf(read, {
        manifest: { manifest: manifestOf(offerOf({ inputSchema: { type: "string" } })) },
      }),
      status: "False",
      reason: "InvalidSchema",
      words: ['the top level must be {"type": "object"}'],
    },
    {
      name: "EffectChanged: the provider now declares a weaker effect than first observed (write → read)",
      input: inputOf(capabilityOf({ status: { observedEffect: "write" } })),
      status: "False",
      reason: "EffectChanged",
      words: [
        "now declares read but write was observed first",
        "recreate the Capability",
        "an edit keeps status.observedEffect",
      ],
    },
    {
      name: "SidecarWriteUnsupported: a write offered by a Sidecar provider",
      input: inputOf(publish, {
        provider: providerOf({ placement: "Sidecar" }),
        manifest: { manifest: manifestOf(write) },
      }),
      status: "False",
      reason: "SidecarWriteUnsupported",
      words: ["aps.schedule.publish writes", "runs as a Sidecar", "placement Shared"],
    },
    {
      name: "SidecarWriteUnsupported wins over InvalidSchema",
      input: inputOf(publish, {
        provider: providerOf({ placement: "Sidecar" }),
        manifest: { manifest: manifestOf({ ...write, inputSchema: { type: "string" } }) },
      }),
      status: "False",
      reason: "SidecarWriteUnsupported",
      words: ["runs as a Sidecar"],
    },
    {
      name: "DuplicateId: another Capability of the namespace has the same id",
      input: inputOf(read, { capabilities: [read, capabilityOf({ name: "aps-read-copy" })] }),
      status: "False",
      reason: "DuplicateId",
      words: ["Capability aps-read-copy in this namespace also defines the tool aps_schedule_read"],
    },
    {
      name: "DuplicateId: ids that meet in one tool name, naming each of the others",
      input: inputOf(read, {
        capabilities: [
          read,
          capabilityOf({ name: "aps-read-underscore", id: "aps.schedule_read" }),
          capabilityOf({ name: "aps-read-copy" }),
        ],
      }),
      status: "False",
      reason: "DuplicateId",
      words: ["Capability aps-read-copy, Capability aps-read-underscore", "also define the tool"],
    },
    {
      name: "DuplicateId wins over ProviderNotReady",
      input: inputOf(read, {
        provider: undefined,
        manifest: undefined,
        capabilities: [read, capabilityOf({ name: "aps-read-copy" })],
      }),
      status: "False",
      reason: "DuplicateId",
      words: ["none of them is offered"],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const plan = planCapability(row.input);
      const ready = readyOf(plan.status);
      expect(ready).toMatchObject({
        type: "Ready",
        status: row.status,
        reason: row.reason,
        observedGeneration: 3,
      });
      for (const word of row.words) expect(ready?.message).toContain(word);
      expect(plan.status?.observedGeneration).toBe(3);
      expect(plan.requeueAfterMs).toBe(row.status === "True" ? undefined : NOT_READY_RECHECK_MS);
      expect(plan.log.map((l) => `${l.level}/${l.message}`)).toEqual(row.log ?? []);
    });
  }

  it("covers every reason DESIGN §2 lists for the Capability's Ready", () => {
    expect(new Set(rows.map((r) => r.reason))).toEqual(
      new Set([
        "Offered",
        "NotOffered",
        "ProviderNotReady",
        "Disabled",
        "InvalidSchema",
        "EffectChanged",
        "SidecarWriteUnsupported",
        "DuplicateId",
      ]),
    );
  });
});

describe("planCapability: transitions", () => {
  const rows: Array<{
    name: string;
    input: CapabilityPlanInput;
    reason: string;
    /** Whether Ready's lastTransitionTime moves to now (its status changed) or stays. */
    moved: boolean;
  }> = [
    {
      name: "NotOffered → Offered once the provider offers the id",
      input: inputOf(capabilityOf({ status: statusWith("False", "NotOffered") })),
      reason: "Offered",
      moved: true,
    },
    {
      name: "Offered → ProviderNotReady when the provider goes away",
      input: inputOf(capabilityOf({ status: statusWith("True", "Offered") }), {
        provider: undefined,
        manifest: undefined,
      }),
      reason: "ProviderNotReady",
      moved: true,
    },
    {
      name: "Offered → EffectChanged when the provider weakens write to read",
      input: inputOf(capabilityOf({ status: statusWith("True", "Offered", { observedEffect: "write" }) })),
      reason: "EffectChanged",
      moved: true,
    },
    {
      name: "Offered → Disabled when spec.disabled is set",
      input: inputOf(capabilityOf({ disabled: true, status: statusWith("True", "Offered") })),
      reason: "Disabled",
      moved: true,
    },
    {
      name: "Disabled → Offered when spec.disabled is unset",
      input: inputOf(capabilityOf({ status: statusWith("False", "Disabled") })),
      reason: "Offered",
      moved: true,
    },
    {
      name: "ProviderNotReady → DuplicateId without a usable provider: still False, the transition time is kept",
      input: inputOf(capabilityOf({ status: statusWith("False", "ProviderNotReady") }), {
        provider: undefined,
        manifest: undefined,
        capabilities: [capabilityOf({ name: "aps-read-copy" })],
      }),
      reason: "DuplicateId",
      moved: false,
    },
    {
      name: "NotOffered stays NotOffered: the transition time is kept",
      input: inputOf(capabilityOf({ status: statusWith("False", "NotOffered") }), {
        manifest: { manifest: manifestOf() },
      }),
      reason: "NotOffered",
      moved: false,
    },
    // An offer that DuplicateId or spec.disabled overrules is never set on the way: Ready stays False,
    // so its transition time is kept and the pass writes nothing new.
    {
      name: "ProviderNotReady → DuplicateId over an offer: still False, the transition time is kept",
      input: inputOf(capabilityOf({ status: statusWith("False", "ProviderNotReady") }), {
        capabilities: [capabilityOf({ name: "aps-read-copy" })],
      }),
      reason: "DuplicateId",
      moved: false,
    },
    {
      name: "Disabled stays Disabled over an offer: the transition time is kept",
      input: inputOf(capabilityOf({ disabled: true, status: statusWith("False", "Disabled") })),
      reason: "Disabled",
      moved: false,
    },
    {
      name: "DuplicateId stays DuplicateId over an offer: the transition time is kept",
      input: inputOf(capabilityOf({ status: statusWith("False", "DuplicateId") }), {
        capabilities: [capabilityOf({ name: "aps-read-copy" })],
      }),
      reason: "DuplicateId",
      moved: false,
    },
    {
      name: "Offered stays Offered: the transition time is kept",
      input: inputOf(capabilityOf({ status: statusWith("True", "Offered") })),
      reason: "Offered",
      moved: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const ready = readyOf(planCapability(row.input).status);
      expect(ready?.reason).toBe(row.reason);
      expect(ready?.lastTransitionTime).toBe(row.moved ? "2026-12-01T10:00:00Z" : BEFORE);
    });
  }
});

describe("planCapability: the status of an offer", () => {
  it("takes what the provider offers, the digest of its schemas and the tool name", () => {
    const target = { kind: "schedule", idArgument: "planId", versionArgument: "version" };
    const offer = offerOf({ effect: "draft", mode: "async", target });
    const status = planCapability(
      inputOf(capabilityOf(), { manifest: { manifest: manifestOf(offer) } }),
    ).status;
    expect(status).toMatchObject({
      observedGeneration: 3,
      effect: "draft",
      observedEffect: "draft",
      mode: "async",
      idempotency: "natural",
      description: "Reads the schedule.",
      inputSchema: OBJECT,
      outputSchema: OBJECT,
      schemaDigest: schemaDigest(offer),
      toolName: "aps_schedule_read",
      target,
    });
  });

  it("keeps the first effect observed, and drops a target the provider no longer declares", () => {
    const before = {
      observedEffect: "write",
      target: { kind: "schedule", idArgument: "a", versionArgument: "b" },
    };
    const status = planCapability(inputOf(capabilityOf({ status: before as CapabilityStatus }))).status;
    expect(status?.effect).toBe("read");
    expect(status?.observedEffect).toBe("write");
    expect(status && "target" in status).toBe(false);
  });

  it("keeps what the provider offers while disabled, so it is Offered again as soon as it is re-enabled", () => {
    const status = planCapability(inputOf(capabilityOf({ disabled: true }))).status;
    expect(readyOf(status)?.message).toBe(capabilityDisabledMessage(capabilityOf()));
    expect(status).toMatchObject({ effect: "read", toolName: "aps_schedule_read" });
  });

  it("says the provider's own Disabled message when the provider is disabled", () => {
    const status = planCapability(
      inputOf(capabilityOf(), { provider: providerOf({ disabled: true }), manifest: undefined }),
    ).status;
    expect(readyOf(status)?.message).toBe(providerDisabledMessage("aps", "plant-a"));
  });

  it("keeps the status it found for a provider it cannot read, changing only Ready", () => {
    const before = { effect: "read", observedEffect: "read", toolName: "aps_schedule_read" } as const;
    const status = planCapability(
      inputOf(capabilityOf({ status: before }), { manifest: { error: "503 ServiceUnavailable: down" } }),
    ).status;
    expect(status).toMatchObject(before);
  });

  it("does not touch what it was given", () => {
    const input = inputOf(
      capabilityOf({ status: statusWith("True", "Offered", { observedEffect: "write" }) }),
    );
    const copy = structuredClone(input);
    planCapability(input);
    expect(input).toEqual(copy);
  });
});

describe("planCapability: what a pass reads", () => {
  it("reads the manifest at the provider's first endpoint only when the provider is usable", () => {
    expect(manifestEndpointOf(capabilityOf(), providerOf({ endpoints: [ENDPOINT, "http://x"] }))).toBe(
      ENDPOINT,
    );
    expect(manifestEndpointOf(capabilityOf(), undefined)).toBeUndefined();
    expect(manifestEndpointOf(capabilityOf(), providerOf({ disabled: true }))).toBeUndefined();
    expect(manifestEndpointOf(capabilityOf(), providerOf({ ready: "False" }))).toBeUndefined();
    expect(
      manifestEndpointOf(capabilityOf({ providerRef: { name: "aps", namespace: "plant-b" } }), providerOf()),
    ).toBeUndefined();
    expect(manifestEndpointOf(capabilityOf({ deleting: true }), providerOf())).toBeUndefined();
    // A disabled Capability still reads it: its status keeps what the provider offers.
    expect(manifestEndpointOf(capabilityOf({ disabled: true }), providerOf())).toBe(ENDPOINT);
  });

  it("plans nothing for a Capability being deleted", () => {
    expect(planCapability(inputOf(capabilityOf({ deleting: true }), { manifest: undefined }))).toEqual({
      log: [],
    });
  });

  it("throws when the manifest it needs was not read", () => {
    expect(() => planCapability(inputOf(capabilityOf(), { manifest: undefined }))).toThrow(
      /manifestEndpointOf/,
    );
  });
});

describe("the applier over the in-memory writer", () => {
  it("writes the status once, then nothing when planned again over what it wrote", async () => {
    const writer = inMemoryCapabilityWriter();
    const capability = capabilityOf();
    expect(await applyCapability(writer, inputOf(capability), quiet)).toBeUndefined();
    expect(writer.statusWrites()).toHaveLength(1);
    expect(writer.calls[0]?.resourceVersion).toBe("8");
    const written = { ...capability, status: writer.statusWrites()[0] };
    expect(await applyCapability(writer, inputOf(written), quiet)).toBeUndefined();
    expect(writer.statusWrites()).toHaveLength(1);
  });

  it("writes a disabled Capability's status once, though each pass looks at it again", async () => {
    const writer = inMemoryCapabilityWriter();
    const capability = capabilityOf({ disabled: true });
    expect(await applyCapability(writer, inputOf(capability), quiet)).toBeDefined();
    const written = { ...capability, status: writer.statusWrites()[0] };
    const later = inputOf(written, { now: new Date("2026-12-01T10:05:00Z") });
    expect(await applyCapability(writer, later, quiet)).toBeDefined();
    expect(writer.statusWrites()).toHaveLength(1);
  });

  it("looks again soon at a Capability that is not Ready, and logs what the plan says", async () => {
    const writer = inMemoryCapabilityWriter();
    const warned: unknown[] = [];
    const log = { ...quiet, warn: (fields: unknown, message: string) => warned.push([fields, message]) };
    const result = await applyCapability(
      writer,
      inputOf(capabilityOf(), { manifest: { error: "connect ECONNREFUSED" } }),
      log as unknown as Logger,
    );
    expect(result).toEqual({ requeueAfterMs: NOT_READY_RECHECK_MS });
    expect(warned).toEqual([[{ err: "connect ECONNREFUSED" }, "manifest fetch failed"]]);
    expect(readyOf(writer.statusWrites()[0])?.reason).toBe("ProviderNotReady");
  });

  it("writes nothing for a Capability being deleted", async () => {
    const writer = inMemoryCapabilityWriter();
    const input = inputOf(capabilityOf({ deleting: true }), { manifest: undefined });
    expect(await applyCapability(writer, input, quiet)).toBeUndefined();
    expect(writer.calls).toEqual([]);
  });

  it("reads a manifest, or describes why it could not", async () => {
    const manifest = manifestOf(offerOf());
    expect(await readManifest({ fetchManifest: async () => manifest }, ENDPOINT)).toEqual({ manifest });
    const failing = {
      fetchManifest: async (): Promise<Manifest> => {
        throw new Error("connect ECONNREFUSED 10.88.0.9:8080");
      },
    };
    expect(await readManifest(failing, ENDPOINT)).toEqual({ error: "connect ECONNREFUSED 10.88.0.9:8080" });
  });
});
