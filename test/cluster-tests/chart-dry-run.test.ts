/**
 * The chart's manifests against the real API server: for each `charts/gatehouse/ci/*.yaml`, what
 * `helm template` renders is applied with `kubectl apply --server-side --dry-run=server` as admin, so
 * the API server validates every object (schemas, CEL of the CRDs and policies, RBAC rules) without
 * keeping any. Also `helm install --dry-run=server`, which prints the NOTES. The release goes to a fresh
 * namespace; the other namespaces the values name are redirected to a second fresh one.
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { stringify } from "yaml";
import { type Kubectl, kubectlFor } from "../e2e/kubectl.ts";
import { CHART_DIR, helm, type Manifest, renderChart, resolveHelm } from "../helm/helm.ts";

const cluster = inject("cluster");
const kubectl: Kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
const CI_FILES = readdirSync(join(CHART_DIR, "ci"))
  .filter((f) => f.endsWith(".yaml"))
  .sort();
const suffix = randomBytes(3).toString("hex");
const RELEASE_NS = `chart-dry-${suffix}`;
const OTHER_NS = `chart-dry-other-${suffix}`;
const SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com";

/** Values that point every namespace the ci files name at OTHER_NS. */
const REDIRECT = {
  "leaderElection.namespace": OTHER_NS,
  "networkPolicy.sessionNamespaces": [OTHER_NS],
  "rbac.identityBindingNamespaces": [OTHER_NS],
  watchNamespaces: [OTHER_NS],
};

beforeAll(async () => {
  await resolveHelm();
  for (const ns of [RELEASE_NS, OTHER_NS]) await kubectl.ok("admin", ["create", "namespace", ns]);
}, 3_600_000);

afterAll(async () => {
  for (const ns of [RELEASE_NS, OTHER_NS])
    await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
});

describe("the chart on the API server (server-side dry run)", () => {
  it.for(CI_FILES)("accepts every object rendered with ci/%s", async (file, context) => {
    const manifests: Manifest[] = await renderChart({
      namespace: RELEASE_NS,
      valuesFiles: [`charts/gatehouse/ci/${file}`],
      setJson: REDIRECT,
    });
    if (manifests.some((m) => m.kind === "ServiceMonitor")) {
      const crd = await kubectl.run("admin", ["get", "crd", SERVICE_MONITOR_CRD]);
      if (crd.code !== 0) {
        const reason = `ci/${file} renders a ServiceMonitor and this API server has no CRD ${SERVICE_MONITOR_CRD} (Prometheus Operator not installed): not dry-run here`;
        console.log(`skipped: ${reason}`);
        context.skip(reason);
      }
    }
    const input = manifests.map((m) => stringify(m)).join("---\n");
    const result = await kubectl.run(
      "admin",
      // The API's CRDs and policies may be installed already by another field manager (crds/ by
      // kubectl): the dry run takes them over for validation only; nothing is kept.
      [
        "apply",
        "--server-side",
        "--dry-run=server",
        "--force-conflicts",
        "--field-manager=chart-dry-run",
        "-f",
        "-",
      ],
      input,
    );
    expect(result.stderr.trim(), result.stderr).toBe("");
    expect(result.code).toBe(0);
    const applied = result.stdout.trim().split("\n");
    expect(applied).toHaveLength(manifests.length);
    for (const line of applied) expect(line).toMatch(/ serverside-applied \(server dry run\)$/);
  });

  it("prints NOTES that say what to run next and that NetworkPolicies need an enforcing CNI", async () => {
    const result = await helm([
      "install",
      "gatehouse",
      CHART_DIR,
      "--namespace",
      RELEASE_NS,
      "-f",
      join(CHART_DIR, "ci/default.yaml"),
      "--dry-run=server",
      // The API (CRDs, policies, persona roles) may exist already, installed from crds/ by the other
      // tests; a dry run adopts nothing but would otherwise refuse to plan over them.
      "--take-ownership",
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--kube-context",
      "admin",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf("NOTES:"));
    expect(notes).toContain(`kubectl -n ${RELEASE_NS} rollout status deployment/gatehouse-gateway`);
    expect(notes).toContain(`kubectl -n ${RELEASE_NS} rollout status deployment/gatehouse-controller`);
    expect(notes).toContain("enforced only if your CNI");
    expect(notes).toContain("helm.sh/resource-policy: keep");
  });
});
