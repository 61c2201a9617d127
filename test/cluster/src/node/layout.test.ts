import { describe, expect, it } from "vitest";
import { podRootDir, podRootLink } from "./layout.ts";

describe("the pod root containers get (LOCAL_NODE_ROOT)", () => {
  const pod = {
    namespace: "plant-a".repeat(9),
    name: "push-plan".repeat(25),
    uid: "0d55f39e-3788-4ac2-9a96-e586f1f5f2ac",
  };
  const runDir = `/home/${"someone".repeat(10)}/gatehouse/.run/cluster-0`;

  it("leaves room for a Unix socket under a mount path, however long the checkout, namespace and pod name", () => {
    // The pi engine's tool bridge: <root>/tmp/gatehouse-engine/bridge.sock; sun_path holds 107 bytes.
    expect(
      Buffer.byteLength(`${podRootLink(runDir, pod)}/tmp/gatehouse-engine/bridge.sock`),
    ).toBeLessThanOrEqual(107);
    expect(Buffer.byteLength(`${podRootDir(runDir, pod)}/tmp/gatehouse-engine/bridge.sock`)).toBeGreaterThan(
      107,
    );
  });

  it("differs per pod and per node run directory", () => {
    expect(podRootLink(runDir, pod)).not.toBe(podRootLink(runDir, { ...pod, uid: "other" }));
    expect(podRootLink(runDir, pod)).not.toBe(podRootLink(`${runDir}-1`, pod));
  });
});
