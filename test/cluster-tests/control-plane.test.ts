/**
 * The local control plane behaves like a real cluster (DESIGN §8): every kubeconfig context is who it
 * says it is, namespaces finish deleting and the garbage collector follows owner references. The local
 * node has its own tests (local-node.test.ts).
 */
import { randomBytes } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { kubectlFor } from "../e2e/kubectl.ts";
import { eventually } from "../e2e/story.ts";

const cluster = inject("cluster");
const kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
const unique = (prefix: string) => `${prefix}-${randomBytes(3).toString("hex")}`;

interface WhoAmI {
  status: { userInfo: { username: string; groups?: string[] } };
}

async function whoami(context: string): Promise<{ username: string; groups: string[] }> {
  const review = JSON.parse((await kubectl.ok(context, ["auth", "whoami", "-o", "json"])).stdout) as WhoAmI;
  return { username: review.status.userInfo.username, groups: review.status.userInfo.groups ?? [] };
}

async function exists(args: string[]): Promise<boolean> {
  const result = await kubectl.run("admin", ["get", ...args, "-o", "name"]);
  if (result.code === 0) return true;
  if (/NotFound|not found/.test(result.stderr)) return false;
  throw new Error(`${result.command} failed: ${result.stderr}`);
}

describe("identities of the kubeconfig contexts", () => {
  it.each([
    ["admin", "admin", ["system:masters"]],
    ["alice", "alice", []],
    ["bob", "bob", ["planners"]],
    ["carol", "carol", ["approvers"]],
    [
      "gatehouse-gateway",
      "system:serviceaccount:gatehouse-system:gatehouse-gateway",
      ["system:serviceaccounts", "system:serviceaccounts:gatehouse-system"],
    ],
    [
      "gatehouse-controller",
      "system:serviceaccount:gatehouse-system:gatehouse-controller",
      ["system:serviceaccounts", "system:serviceaccounts:gatehouse-system"],
    ],
    [
      "local-node",
      "system:serviceaccount:kube-system:local-node",
      ["system:serviceaccounts", "system:serviceaccounts:kube-system"],
    ],
  ])("context %s authenticates as %s", async (context, username, groups) => {
    const me = await whoami(context);
    expect(me.username).toBe(username);
    expect(me.groups).toEqual(expect.arrayContaining([...groups, "system:authenticated"]));
  });

  it("gives a persona no more than RBAC grants: alice cannot list secrets cluster-wide", async () => {
    const result = await kubectl.run("alice", ["get", "secrets", "-A"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/forbidden/i);
  });
});

describe("controller-manager", () => {
  it("finishes deleting a namespace that holds objects", async () => {
    const ns = unique("doomed");
    await kubectl.ok("admin", ["create", "namespace", ns]);
    await kubectl.ok("admin", ["create", "configmap", "left-behind", "-n", ns, "--from-literal=k=v"]);
    await kubectl.ok("admin", ["delete", "namespace", ns, "--wait=false"]);
    await eventually(`namespace ${ns} to be gone`, 120_000, async () =>
      (await exists(["namespace", ns])) ? undefined : true,
    );
  });

  it("garbage-collects an object whose owner was deleted", async () => {
    const ns = unique("gc");
    await kubectl.ok("admin", ["create", "namespace", ns]);
    try {
      await kubectl.ok("admin", ["create", "configmap", "owner", "-n", ns, "--from-literal=k=v"]);
      const ownerUid = (
        await kubectl.ok("admin", ["get", "configmap", "owner", "-n", ns, "-o", "jsonpath={.metadata.uid}"])
      ).stdout;
      const dependent = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "dependent",
          namespace: ns,
          ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: ownerUid }],
        },
        data: { k: "v" },
      };
      await kubectl.ok("admin", ["create", "-f", "-"], JSON.stringify(dependent));
      await kubectl.ok("admin", ["delete", "configmap", "owner", "-n", ns]);
      await eventually("the dependent ConfigMap to be garbage-collected", 120_000, async () =>
        (await exists(["configmap", "dependent", "-n", ns])) ? undefined : true,
      );
    } finally {
      await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
    }
  });
});
