/**
 * The local node (test/cluster/src/node/, DESIGN §8) runs what the real scheduler binds to it the way a
 * kubelet would: Deployments become Available behind Services, pods get their own network namespace,
 * environment, volumes and projected tokens, and Kubernetes reports sidecars, deadlines, exit codes,
 * restarts and graceful deletion as a cluster does. The tests run concurrently (each in its own
 * namespace) so the two-minute lease observation overlaps the others.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server, connect as tcpConnect } from "node:net";
import {
  AuthenticationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Pod,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { exposeHostPort, startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { createNodeClients } from "../cluster/src/node/kube-client.ts";
import { ServiceAccountTokens, TOKEN_REFRESH_FRACTION } from "../cluster/src/node/tokens.ts";
import { kubectlFor } from "../e2e/kubectl.ts";
import { eventually } from "../e2e/story.ts";
import {
  cluster,
  containerLog,
  containerStatus,
  core,
  createPod,
  hasCondition,
  loggedTime,
  testbox,
  testNamespace,
  waitForPod,
  waitForTerminal,
} from "./pod-fixtures.ts";

const kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);

interface SliceList {
  items: Array<{ endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }> }>;
}

/** Listens on `host`, answering `reply` to every connection; resolves with the server and its port. */
function listen(host: string, reply: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      socket.on("error", () => {}); // a probe that resets the connection is fine
      socket.end(`${reply}\n`);
    });
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}

/** Connects from the host and resolves with what the peer says first. */
function readFrom(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port, timeout: 5_000 });
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString();
    });
    socket.once("end", () => resolve(data.trim()));
    socket.once("timeout", () => reject(new Error(`timeout reading ${host}:${port}`)));
    socket.once("error", (err) =>
      reject(new Error(`reading ${host}:${port}: ${err.message}`, { cause: err })),
    );
  });
}

/** True when a TCP connection from the host to `host:port` opens. */
function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port, timeout: 5_000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function pidOf(pod: V1Pod, container: string): number {
  const id = containerStatus(pod, container)?.containerID ?? "";
  return Number(id.replace("localnode://", ""));
}

function jwtClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as Record<
    string,
    unknown
  >;
}

describe.concurrent("the local node", () => {
  it("runs a Deployment until it is Available, with pod IPs in its Service's EndpointSlices", async () => {
    const { ns, cleanup } = await testNamespace("echo");
    try {
      const labels = { app: "echo" };
      const deployment = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "echo", namespace: ns },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: "echo",
                  image: "gatehouse/echo:dev",
                  env: [{ name: "PORT", value: "8080" }],
                  ports: [{ name: "http", containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: "/ready", port: "http" }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      };
      const service = {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "echo", namespace: ns },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      };
      await kubectl.ok(
        "admin",
        ["apply", "-f", "-"],
        JSON.stringify({ kind: "List", apiVersion: "v1", items: [deployment, service] }),
      );
      await kubectl.ok("admin", [
        "wait",
        "-n",
        ns,
        "--for=condition=Available",
        "--timeout=180s",
        "deployment/echo",
      ]);
      const status = await kubectl.json<{ status?: { availableReplicas?: number } }>("admin", [
        "get",
        "deployment",
        "echo",
        "-n",
        ns,
      ]);
      expect(status.status?.availableReplicas).toBe(2);

      const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: "app=echo" })).items;
      expect(pods).toHaveLength(2);
      const podIPs = pods.map((p) => p.status?.podIP ?? "");
      for (const pod of pods) {
        expect(pod.spec?.nodeName).toBe(cluster.nodeName);
        expect(pod.status?.phase).toBe("Running");
        expect(pod.status?.hostIP).toBe(cluster.bridgeIP);
        expect(pod.status?.podIPs).toEqual([{ ip: pod.status?.podIP }]);
        expect(pod.status?.startTime).toBeDefined();
        for (const type of ["PodScheduled", "Initialized", "ContainersReady", "Ready"]) {
          expect(hasCondition(pod, type), type).toBe(true);
        }
      }
      expect(new Set(podIPs).size).toBe(2);
      expect(podIPs.every((ip) => ip !== "" && !ip.startsWith("127."))).toBe(true);

      // The pods really serve on their own addresses.
      for (const ip of podIPs) {
        const reply = (await (await fetch(`http://${ip}:8080/hello`)).json()) as { ok: boolean };
        expect(reply.ok).toBe(true);
      }

      const sliceIPs = await eventually("EndpointSlices with both pod IPs", 60_000, async () => {
        const slices = await kubectl.json<SliceList>("admin", [
          "get",
          "endpointslices",
          "-n",
          ns,
          "-l",
          "kubernetes.io/service-name=echo",
        ]);
        const ready = slices.items
          .flatMap((s) => s.endpoints ?? [])
          .filter((e) => e.conditions?.ready === true)
          .flatMap((e) => e.addresses);
        return ready.length === 2 ? ready : undefined;
      });
      expect([...sliceIPs].sort()).toEqual([...podIPs].sort());
    } finally {
      await cleanup();
    }
  });

  it("keeps pods apart, off the host's loopback and off host ports that were not exposed", async () => {
    const { ns, cleanup } = await testNamespace("isolation");
    const wildcard = await listen("0.0.0.0", "host-only");
    const exposed = await listen(cluster.bridgeIP, "exposed");
    try {
      // Preconditions, so a refusal below means something: both are reachable from the host itself.
      expect(await readFrom("127.0.0.1", wildcard.port)).toBe("host-only");
      expect(await canConnect("127.0.0.1", 5432)).toBe(true);
      await exposeHostPort(cluster.instance, exposed.port);

      const server = (name: string) =>
        createPod(ns, name, {
          restartPolicy: "Always",
          containers: [
            {
              ...testbox("server", "serve", "8080"),
              ports: [{ containerPort: 8080 }],
              readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            },
          ],
        });
      await Promise.all([server("a"), server("b")]);
      const [a, b] = await Promise.all(
        ["a", "b"].map((name) => waitForPod(ns, name, "Ready", (p) => hasCondition(p, "Ready"))),
      );
      const ipA = a?.status?.podIP ?? "";
      const ipB = b?.status?.podIP ?? "";
      expect(ipA).not.toBe(ipB);
      // Both listen on 8080 in their own namespace; the host reaches each on its pod IP.
      expect(await readFrom(ipA, 8080)).toBe("ok");
      expect(await readFrom(ipB, 8080)).toBe("ok");
      const servers = await Promise.all(
        ["a", "b"].map((name) => core.readNamespacedPod({ namespace: ns, name })),
      );
      for (const pod of servers) expect(containerStatus(pod, "server")?.restartCount).toBe(0);

      const probes: Record<string, [string, number, "connected" | RegExp]> = {
        "to-postgres": ["127.0.0.1", 5432, /^failed ECONNREFUSED/m],
        "to-wildcard": [cluster.bridgeIP, wildcard.port, /^failed ECONNREFUSED/m],
        "to-exposed": [cluster.bridgeIP, exposed.port, "connected"],
        "to-apiserver": [cluster.bridgeIP, 6443, "connected"],
        "to-pod": [ipA, 8080, "connected"],
      };
      await Promise.all(
        Object.entries(probes).map(([name, [host, port]]) =>
          createPod(ns, name, { containers: [testbox("probe", "connect", host, String(port))] }),
        ),
      );
      for (const [name, [, , expected]] of Object.entries(probes)) {
        const pod = await waitForTerminal(ns, name);
        const log = containerLog(pod, "probe");
        if (expected === "connected") {
          expect(pod.status?.phase, `${name}: ${log}`).toBe("Succeeded");
          expect(log).toMatch(/^connected$/m);
        } else {
          expect(pod.status?.phase, `${name}: ${log}`).toBe("Failed");
          expect(log).toMatch(expected);
        }
      }
    } finally {
      wildcard.server.close();
      exposed.server.close();
      await cleanup();
    }
  });

  it("projects a pod-bound token for audience gatehouse that TokenReview accepts, and renews it at 80% of its TTL", async () => {
    const { ns, cleanup } = await testNamespace("token");
    try {
      await createPod(ns, "holder", {
        containers: [
          {
            ...testbox("app", "report", "--file", "/var/run/gatehouse/token"),
            volumeMounts: [{ name: "gatehouse-token", mountPath: "/var/run/gatehouse", readOnly: true }],
          },
        ],
        volumes: [
          {
            name: "gatehouse-token",
            projected: {
              sources: [
                { serviceAccountToken: { audience: "gatehouse", expirationSeconds: 600, path: "token" } },
              ],
            },
          },
        ],
      });
      const pod = await waitForTerminal(ns, "holder");
      expect(pod.status?.phase).toBe("Succeeded");
      const line = /^file \/var\/run\/gatehouse\/token=(.*)$/m.exec(containerLog(pod, "app"))?.[1];
      const token = JSON.parse(line ?? '""') as string;
      expect(token.split(".")).toHaveLength(3);

      const kc = new KubeConfig();
      kc.loadFromFile(cluster.kubeconfigPath);
      kc.setCurrentContext("admin");
      const authn = kc.makeApiClient(AuthenticationV1Api);
      const review = async (t: string, audience: string) =>
        (await authn.createTokenReview({ body: { spec: { token: t, audiences: [audience] } } })).status;

      const accepted = await review(token, "gatehouse");
      expect(accepted?.authenticated).toBe(true);
      expect(accepted?.audiences).toEqual(["gatehouse"]);
      expect(accepted?.user?.username).toBe(`system:serviceaccount:${ns}:default`);
      expect(accepted?.user?.extra?.["authentication.kubernetes.io/pod-uid"]).toEqual([pod.metadata?.uid]);
      const wrongAudience = await review(token, "https://kubernetes.default.svc.cluster.local");
      expect(wrongAudience?.authenticated ?? false).toBe(false);
      expect(wrongAudience?.error).toMatch(/audience/);
      const claims = jwtClaims(token) as {
        exp: number;
        iat: number;
        "kubernetes.io"?: { pod?: { uid?: string } };
      };
      expect(claims.exp - claims.iat).toBe(600);
      expect(claims["kubernetes.io"]?.pod?.uid).toBe(pod.metadata?.uid);

      // Renewal, on the node's own token source with the clock moved forward (TokenRequest refuses TTLs
      // under 10 minutes, so the test does not wait for 80 % of one).
      const tokens = new ServiceAccountTokens(createNodeClients(cluster.kubeconfigPath, "local-node").core);
      const key = { namespace: ns, name: "holder", uid: pod.metadata?.uid ?? "" };
      const spec = { serviceAccountName: "default", audience: "gatehouse", expirationSeconds: 600 };
      const t0 = Date.now();
      const first = await tokens.get(key, spec, t0);
      const refreshAt = tokens.nextRefreshAt(key.uid) ?? 0;
      expect(refreshAt).toBeLessThanOrEqual(t0 + TOKEN_REFRESH_FRACTION * 600_000);
      expect(refreshAt).toBeGreaterThan(t0 + TOKEN_REFRESH_FRACTION * 598_000);
      expect(await tokens.get(key, spec, refreshAt - 1)).toBe(first);
      const renewed = await tokens.get(key, spec, refreshAt);
      expect(renewed).not.toBe(first);
      expect((await review(renewed, "gatehouse"))?.authenticated).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it("resolves env valueFrom, envFrom and secret, configMap, emptyDir and downwardAPI volumes inside the process", async () => {
    const { ns, cleanup } = await testNamespace("values");
    try {
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: "settings" }, data: { greeting: "hello", mode: "strict" } },
      });
      await core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name: "creds" }, stringData: { password: "s3cret" } },
      });
      const vars = [
        "POD_NAME",
        "POD_IP",
        "NODE",
        "PASSWORD",
        "GREETING",
        "MEMORY_MI",
        "CPU_MILLI",
        "CFG_mode",
        "COMBINED",
        "KUBERNETES_SERVICE_HOST",
        "KUBERNETES_SERVICE_PORT",
      ];
      await createPod(ns, "values", {
        containers: [
          {
            ...testbox(
              "app",
              "report",
              ...vars,
              "--file",
              "/etc/settings/greeting.txt",
              "--file",
              "/etc/creds/password",
              "--file",
              "/etc/info/memory",
              "--file",
              "/etc/info/name",
            ),
            resources: { requests: { cpu: "250m", memory: "32Mi" }, limits: { memory: "64Mi" } },
            envFrom: [{ prefix: "CFG_", configMapRef: { name: "settings" } }],
            env: [
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
              { name: "PASSWORD", valueFrom: { secretKeyRef: { name: "creds", key: "password" } } },
              { name: "GREETING", valueFrom: { configMapKeyRef: { name: "settings", key: "greeting" } } },
              {
                name: "MEMORY_MI",
                valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
              },
              {
                name: "CPU_MILLI",
                valueFrom: { resourceFieldRef: { resource: "requests.cpu", divisor: "1m" } },
              },
              { name: "COMBINED", value: "$(GREETING)-$(POD_NAME)" },
            ],
            volumeMounts: [
              { name: "settings", mountPath: "/etc/settings" },
              { name: "creds", mountPath: "/etc/creds" },
              { name: "info", mountPath: "/etc/info" },
              { name: "scratch", mountPath: "/scratch" },
            ],
          },
        ],
        volumes: [
          {
            name: "settings",
            configMap: { name: "settings", items: [{ key: "greeting", path: "greeting.txt" }] },
          },
          { name: "creds", secret: { secretName: "creds" } },
          {
            name: "info",
            downwardAPI: {
              items: [
                { path: "name", fieldRef: { fieldPath: "metadata.name" } },
                {
                  path: "memory",
                  resourceFieldRef: { containerName: "app", resource: "requests.memory", divisor: "1Mi" },
                },
              ],
            },
          },
          { name: "scratch", emptyDir: {} },
        ],
      });
      const pod = await waitForTerminal(ns, "values");
      const log = containerLog(pod, "app");
      expect(pod.status?.phase, log).toBe("Succeeded");
      const reported = Object.fromEntries(
        [...log.matchAll(/^(?:env|file) ([^=]+)=(.*)$/gm)].map((m) => [m[1], JSON.parse(m[2] ?? "null")]),
      );
      expect(reported).toEqual({
        POD_NAME: "values",
        POD_IP: pod.status?.podIP,
        NODE: cluster.nodeName,
        PASSWORD: "s3cret",
        GREETING: "hello",
        MEMORY_MI: "64",
        CPU_MILLI: "250",
        CFG_mode: "strict",
        COMBINED: "hello-values",
        KUBERNETES_SERVICE_HOST: cluster.bridgeIP,
        KUBERNETES_SERVICE_PORT: "6443",
        "/etc/settings/greeting.txt": "hello",
        "/etc/creds/password": "s3cret",
        "/etc/info/memory": "32",
        "/etc/info/name": "values",
      });
    } finally {
      await cleanup();
    }
  });

  it("turns a pod Ready and back by its exec readiness probe", async () => {
    const { ns, cleanup } = await testNamespace("exec-probe");
    try {
      await createPod(ns, "probed", {
        restartPolicy: "Always",
        containers: [
          {
            ...testbox("app", "sleep", "forever"),
            readinessProbe: {
              exec: { command: ["test", "-f", "$(LOCAL_NODE_ROOT)/work/ready"] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
            volumeMounts: [{ name: "work", mountPath: "/work" }],
          },
        ],
        volumes: [{ name: "work", emptyDir: {} }],
      });
      const running = await waitForPod(ns, "probed", "Running", (p) => p.status?.phase === "Running");
      expect(hasCondition(running, "Ready")).toBe(false);
      const podRoot = `${cluster.runDir}/pods/${ns}_probed_${running.metadata?.uid}/root`;
      execFileSync("touch", [`${podRoot}/work/ready`]);
      await waitForPod(ns, "probed", "Ready", (p) => hasCondition(p, "Ready"));
      execFileSync("rm", [`${podRoot}/work/ready`]);
      const unready = await waitForPod(ns, "probed", "not Ready", (p) => !hasCondition(p, "Ready"));
      expect(containerStatus(unready, "app")?.ready).toBe(false);
      expect(unready.status?.phase).toBe("Running");
    } finally {
      await cleanup();
    }
  });

  it("starts a native sidecar before the main container and stops it once the main container has exited", async () => {
    const { ns, cleanup } = await testNamespace("sidecar");
    try {
      await createPod(ns, "with-sidecar", {
        initContainers: [{ ...testbox("helper", "sleep", "forever"), restartPolicy: "Always" }],
        containers: [testbox("main", "exit", "0", "1500")],
      });
      // While main runs, compare the kernel start times of both processes (field 22 of /proc/PID/stat).
      const both = await waitForPod(ns, "with-sidecar", "main running", (p) =>
        Boolean(containerStatus(p, "main")?.state?.running),
      );
      const startTicks = (pid: number) => {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
      };
      expect(startTicks(pidOf(both, "helper"))).toBeLessThanOrEqual(startTicks(pidOf(both, "main")));
      const pod = await waitForTerminal(ns, "with-sidecar");
      expect(pod.status?.phase).toBe("Succeeded");
      const mainStarted = loggedTime(containerLog(pod, "main"), "started exit");
      const helperStopped = loggedTime(containerLog(pod, "helper"), "received SIGTERM");
      // main exits 1500 ms after it started; the sidecar got SIGTERM only after that.
      expect(helperStopped).toBeGreaterThanOrEqual(mainStarted + 1500);
      expect(containerStatus(pod, "helper")?.state?.terminated?.exitCode).toBe(0);
      expect(containerStatus(pod, "main")?.state?.terminated).toMatchObject({
        exitCode: 0,
        reason: "Completed",
      });
    } finally {
      await cleanup();
    }
  });

  it("fails a pod that outlives activeDeadlineSeconds with reason DeadlineExceeded", async () => {
    const { ns, cleanup } = await testNamespace("deadline");
    try {
      await createPod(ns, "late", {
        activeDeadlineSeconds: 2,
        terminationGracePeriodSeconds: 1,
        containers: [testbox("app", "sleep", "forever")],
      });
      const pod = await waitForTerminal(ns, "late");
      expect(pod.status?.phase).toBe("Failed");
      expect(pod.status?.reason).toBe("DeadlineExceeded");
      expect(containerStatus(pod, "app")?.state?.terminated).toBeDefined();
    } finally {
      await cleanup();
    }
  });

  it("reports exit codes: Failed with the code under Never, restarts counted under OnFailure", async () => {
    const { ns, cleanup } = await testNamespace("exits");
    try {
      await createPod(ns, "never", { containers: [testbox("app", "exit", "3")] });
      await createPod(ns, "on-failure", {
        restartPolicy: "OnFailure",
        containers: [testbox("app", "exit", "1")],
      });
      const never = await waitForTerminal(ns, "never");
      expect(never.status?.phase).toBe("Failed");
      expect(containerStatus(never, "app")?.state?.terminated).toMatchObject({
        exitCode: 3,
        reason: "Error",
      });
      expect(containerStatus(never, "app")?.restartCount).toBe(0);

      const restarted = await waitForPod(
        ns,
        "on-failure",
        "restarted twice",
        (p) => (containerStatus(p, "app")?.restartCount ?? 0) >= 2,
      );
      expect(restarted.status?.phase).not.toBe("Failed");
      expect(containerStatus(restarted, "app")?.lastState?.terminated?.exitCode).toBe(1);
      expect(containerLog(restarted, "app").match(/^---- app start #/gm)?.length).toBeGreaterThanOrEqual(3);
    } finally {
      await cleanup();
    }
  });

  it("kills a pod that ignores SIGTERM after its grace period, then removes the Pod object", async () => {
    const { ns, cleanup } = await testNamespace("deletion");
    try {
      await createPod(ns, "stubborn", {
        restartPolicy: "Always",
        terminationGracePeriodSeconds: 3,
        containers: [testbox("app", "ignore-sigterm")],
      });
      const running = await waitForPod(ns, "stubborn", "Running", (p) => p.status?.phase === "Running");
      const pid = pidOf(running, "app");
      expect(alive(pid)).toBe(true);
      // Its SIGTERM handler is installed once it has printed its start line.
      await eventually("the container to start", 30_000, async () =>
        containerLog(running, "app").includes("started ignore-sigterm") ? true : undefined,
      );
      await core.deleteNamespacedPod({ namespace: ns, name: "stubborn" });
      await eventually("the Pod object to be gone", 60_000, async () =>
        (await core.readNamespacedPod({ namespace: ns, name: "stubborn" }).catch(() => undefined))
          ? undefined
          : true,
      );
      const gone = Date.now();
      expect(alive(pid)).toBe(false);
      const log = containerLog(running, "app");
      const signalled = loggedTime(log, "ignored SIGTERM");
      expect(signalled).toBeGreaterThan(0);
      // The process outlived SIGTERM by the grace period (3 s) before SIGKILL and the final delete.
      expect(gone - signalled).toBeGreaterThanOrEqual(2_900);
    } finally {
      await cleanup();
    }
  });

  it("keeps the node Ready across two minutes of Lease renewals", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    kc.setCurrentContext("admin");
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const renewals = new Set<number>();
    const readiness: string[] = [];
    const taints: string[] = [];
    const heartbeats = new Set<string>();
    let leaseDurationSeconds = 0;
    // Observe (not sleep): read the Lease and the Node until the renewals seen span two minutes.
    await eventually("Lease renewals spanning two minutes", 200_000, async () => {
      const lease = await coordination.readNamespacedLease({
        namespace: "kube-node-lease",
        name: cluster.nodeName,
      });
      const node = await core.readNode({ name: cluster.nodeName });
      leaseDurationSeconds = lease.spec?.leaseDurationSeconds ?? 0;
      if (lease.spec?.renewTime) renewals.add(new Date(lease.spec.renewTime).getTime());
      const ready = node.status?.conditions?.find((c) => c.type === "Ready");
      readiness.push(ready?.status ?? "missing");
      heartbeats.add(String(ready?.lastHeartbeatTime));
      for (const t of node.spec?.taints ?? []) taints.push(t.key);
      const times = [...renewals].sort((x, y) => x - y);
      return (times.at(-1) ?? 0) - (times[0] ?? 0) >= 120_000 ? times : undefined;
    }).then((times) => {
      // Renewed about every 10 s: a dozen renewals, never a gap the Lease would not cover.
      expect(times.length).toBeGreaterThanOrEqual(11);
      const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t));
      expect(Math.max(...gaps)).toBeLessThan(leaseDurationSeconds * 1000);
    });
    expect(new Set(readiness)).toEqual(new Set(["True"]));
    expect(taints).toEqual([]);
    // The Node status heartbeat (every 60 s) also moved on within the window.
    expect(heartbeats.size).toBeGreaterThanOrEqual(2);
  });

  it("leaves no network namespace, link, firewall or process behind after stop(), and marks its Node NotReady", async () => {
    const plane = await startControlPlane();
    let node: Awaited<ReturnType<typeof startLocalNode>> | undefined;
    try {
      node = await startLocalNode(plane);
      const kc = new KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      kc.setCurrentContext("admin");
      const api = kc.makeApiClient(CoreV1Api);
      await eventually("ServiceAccount default/default", 60_000, async () =>
        (await api
          .readNamespacedServiceAccount({ namespace: "default", name: "default" })
          .catch(() => undefined))
          ? true
          : undefined,
      );
      await api.createNamespacedPod({
        namespace: "default",
        body: {
          metadata: { name: "busy" },
          spec: {
            initContainers: [{ ...testbox("helper", "sleep", "forever"), restartPolicy: "Always" }],
            containers: [testbox("app", "ignore-sigterm"), testbox("other", "serve", "8080")],
          },
        },
      });
      const pod = await eventually("pod busy Running", 90_000, async () => {
        const p = await api.readNamespacedPod({ namespace: "default", name: "busy" });
        return (p.status?.containerStatuses ?? []).filter((c) => c.state?.running).length === 2
          ? p
          : undefined;
      });
      const pids = ["helper", "app", "other"].map((c) => pidOf(pod, c));
      expect(pids.every(alive)).toBe(true);
      const prefix = `ghbr${plane.instance}`;
      const netns = () => execFileSync("ip", ["netns", "list"], { encoding: "utf8" });
      expect(netns()).toContain(`${prefix}-p`);
      const tables = () => execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
      expect(tables()).toContain(`gatehouse_np_${prefix}`);

      await node.stop();
      node = undefined;
      // The node removes its NetworkPolicy table itself; the harness's release removes the rest.
      expect(tables()).not.toContain(`gatehouse_np_${prefix}`);
      const stopped = await api.readNode({ name: "local-node" });
      expect(stopped.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("False");
      expect(pids.some(alive)).toBe(false);
    } finally {
      await node?.stop();
      await plane.stop();
    }
    const prefix = `ghbr${plane.instance}`;
    expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).not.toContain(`${prefix}-`);
    expect(execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" })).not.toMatch(
      new RegExp(`\\b${prefix}(v\\d+)?[:@]`),
    );
    const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
    expect(tables).not.toContain(`gatehouse_${prefix}`);
    expect(tables).not.toContain(`gatehouse_np_${prefix}`);
    expect(execFileSync("ls", ["/run/gatehouse-cluster"], { encoding: "utf8" })).not.toMatch(
      new RegExp(`^${plane.instance}\\.pid$`, "m"),
    );
  });
});
