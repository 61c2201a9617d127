/**
 * The local node's Service proxy (test/cluster/src/service-proxy.ts) does for one Service what
 * kube-proxy would: connections to its bridge address reach the Service's ready pods, round-robin,
 * from the host and from pods (through the pod firewall), and are closed when no pod is ready.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProxy, startServiceProxy } from "../cluster/src/index.ts";
import { eventually } from "../e2e/story.ts";
import {
  cluster,
  containerLog,
  core,
  createPod,
  testbox,
  testNamespace,
  waitForTerminal,
} from "./pod-fixtures.ts";

let ns: string;
let cleanup: () => Promise<void>;
let proxy: ServiceProxy;

async function echoPod(name: string): Promise<void> {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, labels: { app: "echo" } },
      spec: {
        containers: [
          {
            name: "echo",
            image: "gatehouse/echo:dev",
            ports: [{ name: "http", containerPort: 8080 }],
            readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    },
  });
}

/** The pod names answering through the proxy for `count` requests from the host (undefined = refused). */
async function answers(count: number): Promise<Array<string | undefined>> {
  const names: Array<string | undefined> = [];
  for (let i = 0; i < count; i++) {
    const body = await fetch(proxy.url, { headers: { connection: "close" } })
      .then((r) => r.json() as Promise<{ pod: string }>)
      .catch(() => undefined);
    names.push(body?.pod);
  }
  return names;
}

beforeAll(async () => {
  ({ ns, cleanup } = await testNamespace("svc-proxy"));
  await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: "echo" },
      spec: {
        selector: { app: "echo" },
        ports: [
          { name: "http", port: 80, targetPort: "http" },
          { name: "other", port: 81, targetPort: 9999 },
        ],
      },
    },
  });
  proxy = await startServiceProxy({
    kubeconfigPath: cluster.kubeconfigPath,
    namespace: ns,
    service: "echo",
    portName: "http",
    host: cluster.bridgeIP,
    instance: cluster.instance,
  });
  await echoPod("echo-a");
  await echoPod("echo-b");
  await eventually("both echo pods behind the proxy", 120_000, async () =>
    proxy.endpoints().length === 2 ? true : undefined,
  );
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  await cleanup?.();
});

describe("the Service proxy", () => {
  it("sends connections from the host round-robin to the Service's ready pods, on the named port", async () => {
    expect(proxy.endpoints().every((e) => e.port === 8080)).toBe(true);
    const names = await answers(4);
    expect(new Set(names)).toEqual(new Set(["echo-a", "echo-b"]));
    expect(names[0]).not.toBe(names[1]);
  });

  it("is reachable from a pod at the bridge address", async () => {
    const pod = await createPod(ns, "client", {
      containers: [testbox("connect", "connect", proxy.host, String(proxy.port))],
    });
    const done = await waitForTerminal(ns, "client");
    expect(containerLog(done, "connect")).toContain("connected");
    expect(done.status?.phase).toBe("Succeeded");
    expect(pod.metadata?.name).toBe("client");
  });

  it("closes connections once no pod of the Service is ready", async () => {
    await core.deleteCollectionNamespacedPod({
      namespace: ns,
      labelSelector: "app=echo",
      gracePeriodSeconds: 0,
    });
    await eventually("the endpoints to be gone", 60_000, async () =>
      proxy.endpoints().length === 0 ? true : undefined,
    );
    expect(await answers(2)).toEqual([undefined, undefined]);
  });
});
