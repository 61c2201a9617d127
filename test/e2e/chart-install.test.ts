/**
 * The chart installed for real: `helm install --take-ownership` of charts/gatehouse into
 * gatehouse-system on the local control plane, its two operator replicas as pods on the local node,
 * agent pods reaching the gateway through its Service (the local node's Service proxy standing in for
 * kube-proxy) — and the reference story of DESIGN §1 (story.ts, as reference-story.test.ts plays it
 * against host processes) passes against that install. Then `helm uninstall` removes the operator and
 * keeps the CRDs; the API and the operator's RBAC from crds/ and deploy/ are applied again for the
 * files that run after this one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentSessionTranscript,
  TRANSCRIPTS_API_SERVICE,
  transcriptPath,
} from "../../operator/src/api/transcripts-api.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { knownMigrations } from "../../operator/src/store/startup-checks.ts";
import {
  type ChartEnvironment,
  GATEWAY_POD_SELECTOR,
  GATEWAY_SERVICE,
  leaseHolder,
  MIGRATE_JOB,
  migrateJobLogs,
  OPERATOR_DEPLOYMENT,
  OPERATOR_POD_SELECTOR,
  podLogs,
  RELEASE,
  restoreApiAfterRelease,
  startChartEnvironment,
} from "./chart-environment.ts";
import { clusterInfo } from "./cluster-info.ts";
import { NAMESPACE } from "./environment.ts";
import { type Kubectl, kubectlFor } from "./kubectl.ts";
import { eventually, forgetEarlierCheckpoints, playReferenceStory, type StoryReport } from "./story.ts";

let env: ChartEnvironment;
let report: StoryReport;
/** The uid of ServiceAccount gatehouse-controller before the install (the harness's token is bound to it). */
let serviceAccountUid: string;
let restored = false;
const silent = { say: () => {}, command: () => {} };

interface PodList {
  items: Array<{
    metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
    spec: {
      nodeName?: string;
      containers: Array<{
        image: string;
        env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string } } }>;
      }>;
    };
    status: { phase?: string; podIP?: string };
  }>;
}

async function operatorServiceAccountUid(kubectl: Kubectl): Promise<string> {
  const got = await kubectl.run("admin", [
    "get",
    "serviceaccount",
    OPERATOR_DEPLOYMENT,
    "-n",
    OPERATOR_NAMESPACE,
    "-o",
    "jsonpath={.metadata.uid}",
  ]);
  return got.stdout;
}

async function restoreApi(kubectl: Kubectl): Promise<void> {
  await restoreApiAfterRelease(kubectl);
  restored = true;
}

beforeAll(async () => {
  const cluster = clusterInfo();
  serviceAccountUid = await operatorServiceAccountUid(
    kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath),
  );
  env = await startChartEnvironment(cluster);
  await forgetEarlierCheckpoints(env.kubectl);
  // The engine policy's binding (kept on uninstall) reads the release's ConfigMap gatehouse-engines; when
  // an earlier release's rollback or uninstall had removed it, every session was refused "no params
  // found". The ConfigMap is kept now too; this names that failure before the story starts.
  const env0 = env;
  await eventually("admission to find the allowed engines of the release", 60_000, async () => {
    const dryRun = await env0.kubectl.run("alice", [
      "create",
      "--dry-run=server",
      "-f",
      "examples/plant-a/session.yaml",
    ]);
    return dryRun.code === 0 ? true : undefined;
  });
  report = await playReferenceStory(env, silent);
}, 1_200_000);

afterAll(async () => {
  await env?.stop();
  if (env && !restored) await restoreApi(env.kubectl);
});

/** The release's live pods of `selector` (default: the controller's, which hold the Lease). */
async function operatorPods(selector = OPERATOR_POD_SELECTOR): Promise<PodList["items"]> {
  const pods = await env.kubectl.json<PodList>("admin", [
    "get",
    "pods",
    "-n",
    OPERATOR_NAMESPACE,
    "-l",
    selector,
  ]);
  return pods.items.filter((p) => !p.metadata.deletionTimestamp);
}

describe("the installed release", () => {
  it("runs two operator pods of the chart's image on the local node, one of which holds the Lease", async () => {
    const pods = await operatorPods();
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      expect(pod.status.phase).toBe("Running");
      expect(pod.spec.nodeName).toBe("local-node");
      expect(pod.spec.containers[0]?.image).toMatch(/^gatehouse\/operator:/);
    }
    const holder = await leaseHolder(env.kubectl);
    expect(pods.filter((p) => holder?.startsWith(`${p.metadata.name}_`))).toHaveLength(1);
    const status = await env.helm(["status", RELEASE, "-n", OPERATOR_NAMESPACE, "-o", "json"]);
    expect((JSON.parse(status.stdout) as { info: { status: string } }).info.status).toBe("deployed");
  });

  it("ran the migrate Job before the operator: every migration applied, both runtime logins created, its owner Secret gone", async () => {
    const job = await env.kubectl.json<{
      metadata: { annotations: Record<string, string> };
      status: { succeeded?: number };
    }>("admin", ["get", "job", MIGRATE_JOB, "-n", OPERATOR_NAMESPACE]);
    expect(job.status.succeeded).toBe(1);
    expect(job.metadata.annotations["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    const { pods: names, text: logs } = await migrateJobLogs(env.kubectl, env.cluster);
    expect(names.length).toBeGreaterThan(0);
    for (const name of knownMigrations()) expect(logs).toContain(`applied ${name}`);
    const database = new URL(env.databaseUrl).pathname.slice(1);
    expect(logs).toContain(`controller login ${database}_controller: created`);
    expect(logs).toContain(`gateway login ${database}_gateway: created`);
    const applied = await env.pool.query("SELECT name FROM pgmigrations ORDER BY name");
    expect(applied.rows.map((r) => r.name)).toEqual(knownMigrations());
    // The hook Secret that carried the owner's URL is deleted once the hooks have run.
    const secret = await env.kubectl.run("admin", ["get", "secret", MIGRATE_JOB, "-n", OPERATOR_NAMESPACE]);
    expect(secret.stderr).toMatch(/NotFound/);
  });

  it.each([
    ["controller", OPERATOR_POD_SELECTOR],
    ["gateway", GATEWAY_POD_SELECTOR],
  ] as const)(
    "gives the %s pods only their own runtime login, which is what they connect as",
    async (component, selector) => {
      const database = new URL(env.databaseUrl).pathname.slice(1);
      const pods = await operatorPods(selector);
      expect(pods).toHaveLength(2);
      for (const pod of pods) {
        const vars = pod.spec.containers[0]?.env ?? [];
        const databaseVars = vars.filter((v) => v.name.includes("DATABASE"));
        expect(databaseVars.map((v) => [v.name, v.valueFrom?.secretKeyRef?.name])).toEqual([
          ["DATABASE_URL", `${RELEASE}-database-${component}`],
        ]);
        for (const v of vars) expect(v.value ?? "").not.toContain(env.databaseUrl);
      }
      // Each pod logs the login it connected as (current_user) once its store passed the start-up checks.
      const logs = podLogs(
        env.cluster,
        pods.map((p) => p.metadata.name),
        component,
      );
      const started = Object.values(logs).filter((text) => text.includes('"databaseLogin"'));
      expect(started).toHaveLength(pods.length);
      for (const text of started) expect(text).toContain(`"databaseLogin":"${database}_${component}"`);
    },
  );

  it("gives agent pods the gateway Service's address, which reaches the gateway pods", async () => {
    const pods = await env.kubectl.json<PodList>("admin", ["get", "pods", "-n", NAMESPACE]);
    const agents = pods.items.filter((p) => p.spec.containers[0]?.image.startsWith("gatehouse/agent:"));
    expect(agents.length).toBeGreaterThan(0);
    for (const agent of agents) {
      const gatewayUrl = agent.spec.containers[0]?.env?.find(
        (e) => e.name === "GATEHOUSE_GATEWAY_URL",
      )?.value;
      expect(gatewayUrl).toBe(env.gatewayProxy.url);
    }
    const gatewayIPs = (await operatorPods(GATEWAY_POD_SELECTOR)).map((p) => p.status.podIP).sort();
    expect(gatewayIPs).toHaveLength(2);
    expect(
      env.gatewayProxy
        .endpoints()
        .map((e) => e.host)
        .sort(),
    ).toEqual(gatewayIPs);
    const readyz = await fetch(`${env.gatewayProxy.url}/readyz`);
    expect(readyz.status).toBe(200);
  });
});

describe("the reference story against the release", () => {
  it("completes alice's request: approved by her, published once, reported in status.result", () => {
    expect(report.alice.sessionPhases.join(",")).toMatch(
      /^(Pending,)?Running,AwaitingApproval,(Running,)?Completed$/,
    );
    expect(report.alice.approvalPhases).toEqual(["Pending", "Executing", "Succeeded"]);
    expect(report.alice.publishExecutions).toEqual(["succeeded"]);
    expect(env.aps.publishes().filter((p) => p.user === "alice")).toHaveLength(1);
    const published = env.aps.publishes().find((p) => p.user === "alice");
    expect(report.alice.result).toContain(`published as version ${published?.version}`);
  });

  it("refuses bob's self-approved publish in the APS, once and finally", () => {
    expect(report.bob.approvalPhases).toEqual(["Pending", "Executing", "Failed"]);
    expect(report.bob.execution).toMatchObject({ state: "failed", errorKind: "forbidden" });
    expect(report.bob.publishExecutions).toEqual(["failed"]);
    expect(env.aps.publishes().filter((p) => p.user === "bob")).toEqual([]);
    expect(report.bob.result).toMatch(/refused/);
  });

  it("keeps an audit chain that verifies against the ConfigMap checkpoints the leader wrote", () => {
    expect(report.audit.cli.code).toBe(0);
    expect(report.audit.ok).toBe(true);
    expect(report.audit.checkpoints).toBeGreaterThan(0);
  });
});

describe("the transcripts API the release registers", () => {
  it("is Available through the API server's aggregator at the gateway pods, and alice reads her transcript with kubectl get --raw", async () => {
    await env.kubectl.ok("admin", [
      "wait",
      "--for=condition=Available",
      "--timeout=60s",
      `apiservice/${TRANSCRIPTS_API_SERVICE}`,
    ]);
    const transcript = AgentSessionTranscript.parse(
      JSON.parse(
        (await env.kubectl.ok("alice", ["get", "--raw", transcriptPath(NAMESPACE, report.alice.sessionName)]))
          .stdout,
      ),
    );
    expect(transcript.metadata.uid).toBe(report.alice.sessionUid);
    expect(transcript.events.map((e) => e.kind)).toEqual(report.alice.transcript.map((row) => row.kind));
  });
});

describe("helm uninstall", () => {
  it("removes the operator's Deployment, pods and Service, and keeps the CRDs and the ServiceAccount", async () => {
    // Sessions first, while the operator still runs to remove their finalizers.
    await env.kubectl.ok("admin", ["delete", "agentsessions", "--all", "-n", NAMESPACE, "--timeout=60s"]);
    const result = await env.uninstall();
    expect(result.code, result.stderr).toBe(0);
    const deployment = await env.kubectl.run("admin", [
      "get",
      "deployment",
      OPERATOR_DEPLOYMENT,
      "-n",
      OPERATOR_NAMESPACE,
    ]);
    expect(deployment.stderr).toMatch(/NotFound/);
    await eventually("the operator pods to be gone", 120_000, async () =>
      (await operatorPods()).length === 0 ? true : undefined,
    );
    const service = await env.kubectl.run("admin", [
      "get",
      "service",
      GATEWAY_SERVICE,
      "-n",
      OPERATOR_NAMESPACE,
    ]);
    expect(service.stderr).toMatch(/NotFound/);
    // The APIService goes with it: one left behind, unavailable, would block namespace deletion.
    const apiService = await env.kubectl.run("admin", ["get", "apiservice", TRANSCRIPTS_API_SERVICE]);
    expect(apiService.stderr).toMatch(/NotFound/);
    const crds = await env.kubectl.json<{ items: Array<{ metadata: { name: string } }> }>("admin", [
      "get",
      "crd",
      "-l",
      "app.kubernetes.io/part-of=gatehouse",
    ]);
    expect(crds.items.map((c) => c.metadata.name).sort()).toEqual([
      "agentsessions.gatehouse.dev",
      "approvals.gatehouse.dev",
      "capabilities.gatehouse.dev",
      "providerinstances.gatehouse.dev",
    ]);
    // Nothing serves the gateway Service's address any more.
    await eventually("the gateway's endpoints to be gone", 60_000, async () =>
      env.gatewayProxy.endpoints().length === 0 ? true : undefined,
    );
    // Kept (value controller.serviceAccount.annotations), so the harness's gatehouse-controller token stays valid.
    expect(await operatorServiceAccountUid(env.kubectl)).toBe(serviceAccountUid);
  });

  it("leaves an API that crds/ and deploy/ apply over again, giving the operator its RBAC back", async () => {
    const can = async (verb: string, resource: string, ...more: string[]) =>
      (
        await env.kubectl.run("admin", [
          "auth",
          "can-i",
          verb,
          resource,
          "-A",
          `--as=system:serviceaccount:${OPERATOR_NAMESPACE}:${OPERATOR_DEPLOYMENT}`,
          ...more,
        ])
      ).stdout.trim();
    expect(await can("watch", "agentsessions.gatehouse.dev")).toBe("no");
    await restoreApi(env.kubectl);
    expect(await can("watch", "agentsessions.gatehouse.dev")).toBe("yes");
    expect(await can("patch", "approvals.gatehouse.dev", "--subresource=status")).toBe("yes");
  });
});
