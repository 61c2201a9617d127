/**
 * The ProviderInstance and Capability controllers on the real control plane and local node (DESIGN §2):
 * a Shared provider runs as a Deployment behind a Service and a NetworkPolicy, becomes Ready
 * and Healthy with its manifest in status (its endpoints only from the EndpointSlices the EndpointSlice
 * controller keeps for its Service, never a forged one), and its Capabilities resolve against what it really offers;
 * `spec.disabled` turns both not Ready and keeps the workloads; a weaker effect declared later, a schema
 * a model cannot use and a write behind a Sidecar each make only the Capability concerned not Ready.
 * The provider fixture (test/cluster/images/provider-fixture.ts) declares whatever its config says.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exposeHostPort } from "../cluster/src/index.ts";
import { startFakeErp } from "../fakes/src/erp/index.ts";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Watched {
  spec?: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    effect?: string;
    observedEffect?: string;
    inputSchema?: Record<string, unknown>;
    toolName?: string;
    manifest?: { provider: string; capabilities: Array<{ id: string; effect: string }> };
    endpoints?: string[];
    lastHealthCheck?: string;
  };
}

let env: Environment;

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

function get(kind: string, name: string, namespace: string): Promise<Watched> {
  return env.kubectl.json<Watched>("admin", ["get", kind, name, "-n", namespace]);
}

const condition = (o: Watched, type: string) => o.status?.conditions?.find((c) => c.type === type);

/** Waits until `kind/name` has condition Ready with `reason`, and returns the object. */
function readyReason(kind: string, name: string, namespace: string, reason: string): Promise<Watched> {
  return eventually(`${kind} ${name} Ready reason ${reason}`, 180_000, async () => {
    const object = await get(kind, name, namespace);
    return condition(object, "Ready")?.reason === reason ? object : undefined;
  });
}

async function apply(items: unknown[]): Promise<void> {
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items }),
  );
}

function fixtureProvider(namespace: string, name: string, capabilities: unknown[], placement = "Shared") {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: { name, namespace },
    spec: {
      type: "fixture",
      image: "gatehouse/provider-fixture:dev",
      placement,
      config: { FIXTURE_CAPABILITIES: JSON.stringify(capabilities) },
    },
  };
}

function capability(namespace: string, name: string, provider: string, id: string) {
  return {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "Capability",
    metadata: { name, namespace },
    spec: { id, providerRef: { name: provider } },
  };
}

async function freshNamespace(prefix: string): Promise<string> {
  const namespace = `${prefix}-${randomBytes(3).toString("hex")}`;
  await env.kubectl.ok("admin", ["create", "namespace", namespace]);
  return namespace;
}

describe("the erp provider", () => {
  it("runs Shared against the fake ERP: Ready and Healthy, its manifest in status, its Capability Ready with the schemas", async () => {
    const erp = await startFakeErp({ host: env.cluster.bridgeIP, port: 0 });
    try {
      await exposeHostPort(env.cluster.instance, Number(new URL(erp.url).port));
      const namespace = await freshNamespace("erp");
      await apply([
        {
          apiVersion: "gatehouse.dev/v1alpha1",
          kind: "ProviderInstance",
          metadata: { name: "erp", namespace },
          spec: { type: "erp", image: "gatehouse/provider-erp:dev", config: { ERP_URL: erp.url } },
        },
        capability(namespace, "stock", "erp", "erp.material.stock"),
        capability(namespace, "master", "erp", "erp.material-master.read"),
      ]);
      const provider = await readyReason("providerinstance", "erp", namespace, "ManifestFetched");
      expect(condition(provider, "Healthy")?.status).toBe("True");
      expect(provider.status?.manifest?.provider).toBe("erp");
      expect(provider.status?.manifest?.capabilities.every((c) => c.effect === "read")).toBe(true);
      const stock = await readyReason("capability", "stock", namespace, "Offered");
      expect(stock.status).toMatchObject({ effect: "read", toolName: "erp_material_stock" });
      expect(stock.status?.inputSchema).toMatchObject({ type: "object" });
      const master = await readyReason("capability", "master", namespace, "Offered");
      expect(master.status?.toolName).toBe("erp_material-master_read");
      await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
    } finally {
      await erp.close();
    }
  });
});

describe("a Shared provider", () => {
  it("runs behind a Service and a NetworkPolicy, Ready and Healthy, with its manifest in status", async () => {
    const provider = await readyReason("providerinstance", "aps", NAMESPACE, "ManifestFetched");
    expect(condition(provider, "Healthy")?.status).toBe("True");
    expect(provider.status?.manifest?.provider).toBe("aps");
    expect(provider.status?.manifest?.capabilities.map((c) => c.id).sort()).toEqual([
      "aps.schedule.draft",
      "aps.schedule.publish",
      "aps.schedule.read",
    ]);
    expect(provider.status?.endpoints?.length).toBeGreaterThan(0);
    await env.kubectl.ok("admin", ["get", "deployment/prov-aps", "service/prov-aps", "-n", NAMESPACE]);
    const policy = await env.kubectl.json<V1NetworkPolicy>("admin", [
      "get",
      "networkpolicy",
      "prov-aps",
      "-n",
      NAMESPACE,
    ]);
    expect(policy.spec?.policyTypes).toEqual(["Ingress"]);
    const from =
      policy.spec?.ingress?.[0]?._from ?? (policy.spec?.ingress?.[0] as { from?: unknown[] })?.from;
    // The invoke path (gateway) and approved dispatch (controller) call providers.
    expect(from).toEqual(
      ["gatehouse-gateway", "gatehouse-controller"].map((name) => ({
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "gatehouse-system" } },
        podSelector: { matchLabels: { "app.kubernetes.io/name": name } },
      })),
    );
  });

  it("takes its endpoints only from the EndpointSlices the EndpointSlice controller keeps for its Service", async () => {
    // The attacker's provider: whatever reaches it is a call that went astray.
    const astray: string[] = [];
    const attacker = createServer((request, response) => {
      astray.push(`${request.method} ${request.url}`);
      response.end("{}");
    });
    await new Promise<void>((resolve) => attacker.listen(0, env.cluster.bridgeIP, resolve));
    const attackerUrl = `http://${env.cluster.bridgeIP}:${(attacker.address() as AddressInfo).port}`;
    const service = await env.kubectl.json<{ metadata: { uid: string } }>("admin", [
      "get",
      "service",
      "prov-aps",
      "-n",
      NAMESPACE,
    ]);
    // Slices anyone allowed to create EndpointSlices could write: the provider's labels, the Service's
    // name, even a controller reference to the Service, but not kept by the EndpointSlice controller.
    const forged = (name: string, managedBy?: string) => ({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name,
        namespace: NAMESPACE,
        labels: {
          "app.kubernetes.io/managed-by": "gatehouse",
          "gatehouse.dev/provider": "aps",
          "kubernetes.io/service-name": "prov-aps",
          ...(managedBy ? { "endpointslice.kubernetes.io/managed-by": managedBy } : {}),
        },
        ownerReferences: [
          {
            apiVersion: "v1",
            kind: "Service",
            name: "prov-aps",
            uid: service.metadata.uid,
            controller: true,
          },
        ],
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [env.cluster.bridgeIP], conditions: { ready: true } }],
      ports: [{ name: "http", port: Number(new URL(attackerUrl).port), protocol: "TCP" }],
    });
    const names = ["prov-aps-forged-unmanaged", "prov-aps-forged-other"];
    try {
      await apply([forged(names[0]!), forged(names[1]!, "slice-writer.attacker.example")]);
      // A reconcile that began after the slices reached the controller's cache: a change of the slices
      // queues the provider (its label), two seconds after they were created.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const poked = new Date();
      await env.kubectl.ok("admin", ["label", "endpointslice", ...names, "-n", NAMESPACE, "poke=1"]);
      const seen = await eventually("a provider reconcile after the forged slices", 60_000, async () => {
        const provider = await get("providerinstance", "aps", NAMESPACE);
        expect(provider.status?.endpoints?.join(" ") ?? "").not.toContain(attackerUrl);
        const checked = Date.parse(provider.status?.lastHealthCheck ?? "");
        return checked >= poked.getTime() ? provider : undefined;
      });
      expect(seen.status?.endpoints?.length).toBeGreaterThan(0);
      expect(seen.status?.endpoints?.some((e) => e.startsWith(attackerUrl))).toBe(false);
      // The manifest was fetched from a genuine endpoint, and nothing reached the attacker.
      expect(condition(seen, "Ready")?.reason).toBe("ManifestFetched");
      expect(condition(seen, "Healthy")?.status).toBe("True");
      expect(astray).toEqual([]);
    } finally {
      await env.kubectl.run("admin", ["delete", "endpointslice", ...names, "-n", NAMESPACE]);
      attacker.close();
    }
  });

  it("resolves its Capabilities to Ready with the provider's schemas and the tool name", async () => {
    const publish = await readyReason("capability", "aps-schedule-publish", NAMESPACE, "Offered");
    expect(publish.status).toMatchObject({
      effect: "write",
      observedEffect: "write",
      toolName: "aps_schedule_publish",
    });
    expect(publish.status?.inputSchema).toMatchObject({ type: "object" });
  });

  it("turns the provider and its Capabilities not Ready while spec.disabled is set, keeping the workloads", async () => {
    const patch = (disabled: boolean) =>
      env.kubectl.ok("admin", [
        "patch",
        "providerinstance",
        "aps",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { disabled } }),
      ]);
    await patch(true);
    try {
      await readyReason("providerinstance", "aps", NAMESPACE, "Disabled");
      const cap = await readyReason("capability", "aps-schedule-read", NAMESPACE, "Disabled");
      expect(condition(cap, "Ready")).toMatchObject({
        status: "False",
        message: expect.stringMatching(
          /^ProviderInstance aps is disabled \(spec\.disabled\).*kubectl patch providerinstance aps/,
        ),
      });
      await env.kubectl.ok("admin", ["get", "deployment/prov-aps", "service/prov-aps", "-n", NAMESPACE]);
    } finally {
      await patch(false);
    }
    await readyReason("providerinstance", "aps", NAMESPACE, "ManifestFetched");
    await readyReason("capability", "aps-schedule-read", NAMESPACE, "Offered");
  });
});

describe("a Capability", () => {
  it("goes Ready=False Disabled while its own spec.disabled is set, and Offered again once unset", async () => {
    const setDisabled = (disabled: boolean) =>
      env.kubectl.ok("admin", [
        "patch",
        "capability",
        "aps-schedule-draft",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { disabled: disabled ? true : null } }),
      ]);
    await readyReason("capability", "aps-schedule-draft", NAMESPACE, "Offered");
    await setDisabled(true);
    try {
      const disabled = await readyReason("capability", "aps-schedule-draft", NAMESPACE, "Disabled");
      expect(condition(disabled, "Ready")).toMatchObject({
        status: "False",
        message: expect.stringMatching(
          /^spec\.disabled is set, so this capability is not offered .*kubectl patch capability aps-schedule-draft/,
        ),
      });
      // The printer columns a platform engineer reads show it.
      const row = await env.kubectl.ok("admin", [
        "get",
        "capability",
        "aps-schedule-draft",
        "-n",
        NAMESPACE,
        "--no-headers",
      ]);
      expect(row.stdout).toMatch(/\sFalse\s+Disabled\s/);
      // Its provider stays Ready: only this Capability is switched off.
      expect(condition(await get("capability", "aps-schedule-read", NAMESPACE), "Ready")?.status).toBe(
        "True",
      );
    } finally {
      await setDisabled(false);
    }
    await readyReason("capability", "aps-schedule-draft", NAMESPACE, "Offered");
  });

  it("goes Ready=False EffectChanged when its provider re-declares a write as a read", async () => {
    const namespace = await freshNamespace("effect");
    const offer = (effect: string) => [{ id: "fx.order.place", effect }];
    await apply([
      fixtureProvider(namespace, "fx", offer("write")),
      capability(namespace, "place", "fx", "fx.order.place"),
    ]);
    const first = await readyReason("capability", "place", namespace, "Offered");
    expect(first.status).toMatchObject({ effect: "write", observedEffect: "write" });

    await apply([fixtureProvider(namespace, "fx", offer("read"))]);
    const changed = await readyReason("capability", "place", namespace, "EffectChanged");
    expect(changed.status).toMatchObject({ effect: "read", observedEffect: "write" });
    expect(condition(changed, "Ready")?.message).toMatch(/now declares read but write was observed first/);
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });

  it("goes Ready=False InvalidSchema for an array without items, and only that Capability", async () => {
    const namespace = await freshNamespace("schema");
    await apply([
      fixtureProvider(namespace, "fx", [
        {
          id: "fx.lines.list",
          effect: "read",
          inputSchema: { type: "object", properties: { lines: { type: "array" } } },
        },
        {
          id: "fx.lines.count",
          effect: "read",
          inputSchema: {
            type: "object",
            properties: { lines: { type: "array", items: { type: "string" } } },
          },
        },
      ]),
      capability(namespace, "list", "fx", "fx.lines.list"),
      capability(namespace, "count", "fx", "fx.lines.count"),
    ]);
    const bad = await readyReason("capability", "list", namespace, "InvalidSchema");
    expect(condition(bad, "Ready")?.message).toMatch(
      /inputSchema at \/properties\/lines: an array must declare its items/,
    );
    await readyReason("capability", "count", namespace, "Offered");
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });

  it("goes Ready=False SidecarWriteUnsupported for a write offered by a Sidecar provider", async () => {
    const namespace = await freshNamespace("sidecar");
    await apply([
      fixtureProvider(
        namespace,
        "fx",
        [
          { id: "fx.stock.read", effect: "read" },
          { id: "fx.stock.move", effect: "write" },
        ],
        "Sidecar",
      ),
      capability(namespace, "read", "fx", "fx.stock.read"),
      capability(namespace, "move", "fx", "fx.stock.move"),
    ]);
    const write = await readyReason("capability", "move", namespace, "SidecarWriteUnsupported");
    expect(condition(write, "Ready")?.message).toMatch(/placement Shared/);
    await readyReason("capability", "read", namespace, "Offered");
    await env.kubectl.run("admin", ["delete", "namespace", namespace, "--wait=false"]);
  });

  it("says which spec.providerRef field to fix when the provider is missing or in another namespace", async () => {
    // aps exists in NAMESPACE; the Capability asks for it in another namespace, which is not supported.
    const crossing = {
      ...capability(NAMESPACE, "aps-elsewhere", "aps", "aps.schedule.elsewhere"),
      spec: { id: "aps.schedule.elsewhere", providerRef: { name: "aps", namespace: "plant-b" } },
    };
    await apply([crossing, capability(NAMESPACE, "erp-missing", "erp-nowhere", "erp.stock.read")]);
    try {
      const elsewhere = await readyReason("capability", "aps-elsewhere", NAMESPACE, "ProviderNotReady");
      expect(condition(elsewhere, "Ready")?.message).toBe(
        `spec.providerRef.namespace plant-b: a Capability can only use a ProviderInstance of its own namespace (${NAMESPACE}) for now; remove spec.providerRef.namespace or create the Capability in plant-b.`,
      );
      const missing = await readyReason("capability", "erp-missing", NAMESPACE, "ProviderNotReady");
      expect(condition(missing, "Ready")?.message).toBe(
        `spec.providerRef.name erp-nowhere: no ProviderInstance erp-nowhere in namespace ${NAMESPACE}; create it or fix the name.`,
      );
    } finally {
      await env.kubectl.run("admin", [
        "delete",
        "capability",
        "aps-elsewhere",
        "erp-missing",
        "-n",
        NAMESPACE,
      ]);
    }
  });
});
