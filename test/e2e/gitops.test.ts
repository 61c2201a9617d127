/**
 * examples/gitops as a platform repo syncs it, on the real control plane and local node
 * with the operator running: each overlay under `overlays/` renders with `kubectl kustomize` (the
 * kubectl built with the control plane) into its own namespace on the shared base, applies for real by
 * server-side apply as the sync's own field manager, and its provider and every Capability become
 * Ready there; what differs between plants reaches the cluster; and an overlay whose patch sets a bad
 * field is refused by admission with a message naming the field, leaving the live object as it was.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, REPO_ROOT, startEnvironment } from "./environment.ts";
import { GITOPS_DIR, renderOverlay } from "./examples.ts";
import { eventually } from "./story.ts";

interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: { id?: string; policy?: { allowSelfApproval?: boolean } };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
}

/** The field manager of these applies: a GitOps controller applies as its own manager, never as kubectl. */
const FIELD_MANAGER = "gitops-sync";
const OVERLAYS_DIR = join(GITOPS_DIR, "overlays");
const overlays = readdirSync(OVERLAYS_DIR).sort();

let env: Environment;
const rendered = new Map<string, ManifestObject[]>();
const applied = new Set<string>();

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  for (const overlay of overlays) {
    const yaml = await renderOverlay(env.kubectl, join(OVERLAYS_DIR, overlay), env.aps.url);
    rendered.set(
      overlay,
      parseAllDocuments(yaml).map((document) => document.toJS() as ManifestObject),
    );
  }
}, 600_000);

afterAll(async () => {
  // plant-a is the environment's own namespace (later environments reuse it); the others go.
  for (const namespace of applied) {
    if (namespace === "plant-a") continue;
    await env?.kubectl.run("admin", ["delete", "namespace", namespace, "--timeout=120s"]);
  }
  await env?.stop();
}, 300_000);

/** Server-side apply of `yaml` as the sync's field manager (a real apply, not a dry run). */
function applyServerSide(yaml: string) {
  return env.kubectl.run(
    "admin",
    ["apply", "--server-side", `--field-manager=${FIELD_MANAGER}`, "-f", "-"],
    yaml,
  );
}

describe("examples/gitops rendered per overlay", () => {
  it("has the overlays plant-a and plant-b", () => {
    expect(overlays).toEqual(["plant-a", "plant-b"]);
  });

  it.each(overlays)(
    "renders %s into its own namespace with the base's provider and Capabilities",
    (overlay) => {
      const objects = rendered.get(overlay)!;
      const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
      expect(ofKind("Namespace").map((o) => o.metadata.name)).toEqual([overlay]);
      for (const object of objects.filter((o) => o.kind !== "Namespace")) {
        expect(object.metadata.namespace, `${object.kind} ${object.metadata.name}`).toBe(overlay);
      }
      expect(ofKind("ProviderInstance").map((o) => o.metadata.name)).toEqual(["aps"]);
      expect(ofKind("Capability").map((o) => o.spec?.id)).toEqual(
        expect.arrayContaining(["aps.schedule.read", "aps.schedule.draft", "aps.schedule.publish"]),
      );
      expect(ofKind("Secret").map((o) => o.metadata.labels?.["gatehouse.dev/identity-binding"])).toEqual([
        "aps",
      ]);
      expect(
        ofKind("RoleBinding")
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(["gatehouse-approvers", "gatehouse-session-users"]);
      expect(ofKind("AgentSession")).toEqual([]);
    },
  );
});

describe("examples/gitops applied server-side with the operator running", () => {
  it.each(overlays)(
    "applies %s for real and makes its provider and every Capability Ready",
    async (overlay) => {
      const yaml = await renderOverlay(env.kubectl, join(OVERLAYS_DIR, overlay), env.aps.url);
      const result = await applyServerSide(yaml);
      expect(result.code, result.stderr).toBe(0);
      applied.add(overlay);
      for (const object of rendered.get(overlay)!) {
        expect(result.stdout).toMatch(
          new RegExp(`${object.kind.toLowerCase()}[^/]*/${object.metadata.name} serverside-applied`),
        );
      }
      const managed = await env.kubectl.json<{ metadata: { managedFields?: Array<{ manager: string }> } }>(
        "admin",
        ["get", "capability", "aps-schedule-publish", "-n", overlay, "--show-managed-fields"],
      );
      expect(managed.metadata.managedFields?.map((f) => f.manager)).toContain(FIELD_MANAGER);

      await eventually(`ProviderInstance ${overlay}/aps Ready`, 180_000, async () => {
        const provider = await env.kubectl.json<{ status?: { conditions?: Condition[] } }>("admin", [
          "get",
          "providerinstance",
          "aps",
          "-n",
          overlay,
        ]);
        return provider.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? true
          : undefined;
      });
      const declared = rendered.get(overlay)!.filter((o) => o.kind === "Capability");
      const ready = await eventually(`every Capability in ${overlay} Ready`, 120_000, async () => {
        const list = await env.kubectl.json<{
          items: Array<{ metadata: { name: string }; status?: { conditions?: Condition[] } }>;
        }>("admin", ["get", "capabilities", "-n", overlay]);
        const readyNames = list.items
          .filter((c) => c.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"))
          .map((c) => c.metadata.name);
        return readyNames.length === list.items.length && list.items.length === declared.length
          ? list.items
          : undefined;
      });
      expect(ready.map((c) => c.metadata.name).sort()).toEqual(declared.map((c) => c.metadata.name).sort());
      for (const capability of ready) {
        expect(capability.status?.conditions?.find((c) => c.type === "Ready")?.reason).toBe("Offered");
      }
    },
  );

  it("keeps each plant's differences in the cluster: plant-b's publish needs four eyes and its provider runs with its own APS user", async () => {
    const policyOf = async (namespace: string) =>
      (
        await env.kubectl.json<{ spec: { policy: { allowSelfApproval?: boolean; ttlSeconds?: number } } }>(
          "admin",
          ["get", "capability", "aps-schedule-publish", "-n", namespace],
        )
      ).spec.policy;
    expect(await policyOf("plant-a")).toMatchObject({ allowSelfApproval: true, ttlSeconds: 1800 });
    expect(await policyOf("plant-b")).toMatchObject({ allowSelfApproval: false, ttlSeconds: 3600 });

    // The operator turns spec.config into the provider container's environment.
    const pods = await env.kubectl.json<{
      items: Array<{ spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } }>;
    }>("admin", ["get", "pods", "-n", "plant-b", "-l", "gatehouse.dev/provider=aps"]);
    const environment = pods.items[0]?.spec.containers[0]?.env ?? [];
    expect(environment).toEqual(
      expect.arrayContaining([
        { name: "APS_SERVICE_USER", value: "gatehouse-plant-b" },
        { name: "HANDLER_TIMEOUT_MS", value: "30000" },
      ]),
    );
    const bindings = await env.kubectl.json<{ data: Record<string, string> }>("admin", [
      "get",
      "secret",
      "aps-identity-bindings",
      "-n",
      "plant-b",
    ]);
    expect(Object.keys(bindings.data)).toEqual(["bob"]);
  });

  it("refuses an overlay whose patch sets a bad field, naming the field, and leaves the live object as it was", async () => {
    // A plant's overlay on top of plant-b, as someone might propose it in a pull request: kustomize
    // accepts any value, so the API server's admission (the CRD schema) is what stops it.
    const dir = join(REPO_ROOT, ".run", `gitops-bad-overlay-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(
        join(dir, "kustomization.yaml"),
        [
          "apiVersion: kustomize.config.k8s.io/v1beta1",
          "kind: Kustomization",
          "resources:",
          `  - ${relative(dir, join(OVERLAYS_DIR, "plant-b"))}`,
          "patches:",
          "  - target: { group: gatehouse.dev, kind: Capability, name: aps-schedule-publish }",
          "    patch: |",
          "      - op: replace",
          "        path: /spec/policy/approval",
          "        value: Sometimes",
          "",
        ].join("\n"),
      );
      const yaml = await renderOverlay(env.kubectl, dir, env.aps.url);
      expect(yaml).toContain("approval: Sometimes");
      const result = await applyServerSide(yaml);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain("spec.policy.approval");
      expect(result.stderr).toContain("Sometimes");
      const live = await env.kubectl.json<{ spec: { policy: { approval: string } } }>("admin", [
        "get",
        "capability",
        "aps-schedule-publish",
        "-n",
        "plant-b",
      ]);
      expect(live.spec.policy.approval).toBe("Required");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
