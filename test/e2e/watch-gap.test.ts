/**
 * A watch gap (issue 5), on a second control plane of its own: kube-apiserver is restarted while
 * Capabilities are created and changed, so the operator's watches break and events are lost in between.
 * Its informers must re-list or resume from their resourceVersion, and every change made around the gap
 * must still be reconciled — a created Capability gets a status, a changed one the status of its new spec.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ControlPlane,
  type LocalNode,
  startControlPlane,
  startLocalNode,
} from "../cluster/src/index.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

let plane: ControlPlane;
let node: LocalNode | undefined;
let env: Environment | undefined;

beforeAll(async () => {
  plane = await startControlPlane();
  node = await startLocalNode(plane);
  env = await startEnvironment(plane);
}, 600_000);

afterAll(async () => {
  await env?.stop();
  await node?.stop();
  await plane?.stop();
});

interface CapabilityObject {
  spec: { providerRef: { name: string } };
  status?: { conditions?: Array<{ type: string; reason: string; message: string }> };
}

describe("a kube-apiserver restart", () => {
  it("loses no change: everything created or changed around the gap is reconciled", async () => {
    const e = env as Environment;
    const created: string[] = [];
    const changed = new Map<string, string>();
    let stop = false;
    let seq = 0;
    const capability = (name: string, provider: string) =>
      JSON.stringify({
        apiVersion: "gatehouse.dev/v1alpha1",
        kind: "Capability",
        metadata: { name, namespace: NAMESPACE },
        // An id of its own: Capabilities sharing one would all be Ready=False DuplicateId.
        spec: { id: `gap.probe.${name.replace("-", "")}`, providerRef: { name: provider } },
      });
    // A writer that keeps creating Capabilities and re-pointing earlier ones, before, during (its
    // requests fail then and are not counted) and after the restart.
    const writer = (async () => {
      while (!stop) {
        const name = `gap-${seq++}`;
        const result = await e.kubectl.run("admin", ["apply", "-f", "-"], capability(name, "missing-a"));
        if (result.code === 0) created.push(name);
        const earlier = created[Math.floor(created.length / 2)];
        if (earlier && created.length % 3 === 0) {
          const provider = `missing-${seq}`;
          const update = await e.kubectl.run("admin", ["apply", "-f", "-"], capability(earlier, provider));
          if (update.code === 0) changed.set(earlier, provider);
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();
    await eventually("a few Capabilities before the gap", 60_000, async () =>
      created.length >= 5 ? true : undefined,
    );
    const before = created.length;
    await plane.restartApiServer();
    const restartedAt = created.length;
    await eventually("a few Capabilities after the gap", 60_000, async () =>
      created.length >= restartedAt + 5 ? true : undefined,
    );
    stop = true;
    await writer;
    expect(created.length).toBeGreaterThan(before);

    for (const name of created) {
      const provider = changed.get(name) ?? "missing-a";
      await eventually(`Capability ${name} reconciled for provider ${provider}`, 120_000, async () => {
        const c = await e.kubectl.json<CapabilityObject>("admin", [
          "get",
          "capability",
          name,
          "-n",
          NAMESPACE,
        ]);
        const ready = c.status?.conditions?.find((x) => x.type === "Ready");
        return ready?.reason === "ProviderNotReady" && ready.message.includes(`ProviderInstance ${provider} `)
          ? true
          : undefined;
      });
    }
    expect(changed.size).toBeGreaterThan(0);
  });
});
