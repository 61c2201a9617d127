import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { HarnessError } from "./errors.ts";
import {
  CONTAINER_TARGETS,
  CONTROLLER_SERVICE_ACCOUNT,
  chooseTarget,
  containerTargetUnavailable,
  DEFAULT_K3S_IMAGE,
  DEFAULT_KIND_NODE_IMAGE,
  GATEWAY_SERVICE_ACCOUNT,
  impersonatingKubeconfig,
  PORTABLE_FILES,
  skipReasonFor,
} from "./target.ts";

describe("chooseTarget", () => {
  it("chooses the local control plane when GATEHOUSE_E2E_TARGET is unset or empty", () => {
    expect(chooseTarget({})).toEqual({ name: "local" });
    expect(chooseTarget({ GATEHOUSE_E2E_TARGET: " " })).toEqual({ name: "local" });
  });

  it("chooses kind with the kindest/node image of Kubernetes 1.34 pinned by digest, or the one GATEHOUSE_KIND_IMAGE names", () => {
    expect(DEFAULT_KIND_NODE_IMAGE).toMatch(/^kindest\/node:v1\.34\.\d+@sha256:[0-9a-f]{64}$/);
    expect(chooseTarget({ GATEHOUSE_E2E_TARGET: "kind" })).toEqual({
      name: "kind",
      nodeImage: DEFAULT_KIND_NODE_IMAGE,
      loadImages: [],
    });
    expect(
      chooseTarget({ GATEHOUSE_E2E_TARGET: "kind", GATEHOUSE_KIND_IMAGE: "kindest/node:v1.35.8" }),
    ).toEqual({ name: "kind", nodeImage: "kindest/node:v1.35.8", loadImages: [] });
  });

  it("loads into kind the images GATEHOUSE_E2E_IMAGES lists, separated by commas or white space", () => {
    expect(
      chooseTarget({
        GATEHOUSE_E2E_TARGET: "kind",
        GATEHOUSE_E2E_IMAGES: " gatehouse/operator:dev,gatehouse/agent:dev \n gatehouse/provider-aps:dev,",
      }),
    ).toMatchObject({
      name: "kind",
      loadImages: ["gatehouse/operator:dev", "gatehouse/agent:dev", "gatehouse/provider-aps:dev"],
    });
  });

  it("chooses k3s as its own target, with its K3s image or the one GATEHOUSE_K3S_IMAGE names", () => {
    expect(DEFAULT_K3S_IMAGE).toMatch(/^rancher\/k3s:v1\.34\./);
    expect(chooseTarget({ GATEHOUSE_E2E_TARGET: "k3s" })).toEqual({ name: "k3s", image: DEFAULT_K3S_IMAGE });
    expect(
      chooseTarget({ GATEHOUSE_E2E_TARGET: "k3s", GATEHOUSE_K3S_IMAGE: "rancher/k3s:v1.35.0-k3s1" }),
    ).toEqual({ name: "k3s", image: "rancher/k3s:v1.35.0-k3s1" });
  });

  it("keeps kind and k3s apart: each reads only its own image variable", () => {
    const env = {
      GATEHOUSE_KIND_IMAGE: "kindest/node:v1.35.8",
      GATEHOUSE_K3S_IMAGE: "rancher/k3s:v1.35.0-k3s1",
    };
    expect(chooseTarget({ ...env, GATEHOUSE_E2E_TARGET: "kind" })).toEqual({
      name: "kind",
      nodeImage: "kindest/node:v1.35.8",
      loadImages: [],
    });
    expect(chooseTarget({ ...env, GATEHOUSE_E2E_TARGET: "k3s" })).toEqual({
      name: "k3s",
      image: "rancher/k3s:v1.35.0-k3s1",
    });
  });

  it("chooses the first file of KUBECONFIG and the context GATEHOUSE_E2E_CONTEXT names", () => {
    expect(chooseTarget({ GATEHOUSE_E2E_TARGET: "kubeconfig", KUBECONFIG: "/a/config:/b/config" })).toEqual({
      name: "kubeconfig",
      kubeconfigPath: "/a/config",
    });
    expect(
      chooseTarget({
        GATEHOUSE_E2E_TARGET: "kubeconfig",
        KUBECONFIG: "/a/config",
        GATEHOUSE_E2E_CONTEXT: "prod",
      }),
    ).toEqual({ name: "kubeconfig", kubeconfigPath: "/a/config", context: "prod" });
  });

  it("refuses the kubeconfig target without KUBECONFIG, naming the variable", () => {
    expect(() => chooseTarget({ GATEHOUSE_E2E_TARGET: "kubeconfig" })).toThrow(/needs KUBECONFIG/);
  });

  it("refuses an unknown target with the values it takes", () => {
    let error: unknown;
    try {
      chooseTarget({ GATEHOUSE_E2E_TARGET: "minikube" });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(HarnessError);
    expect((error as HarnessError).kind).toBe("invalid_arguments");
    expect((error as HarnessError).message).toBe(
      "GATEHOUSE_E2E_TARGET=minikube is not a target; use one of local, kind, k3s, kubeconfig (default local)",
    );
  });
});

describe("skipReasonFor", () => {
  it("runs every file on the local target", () => {
    expect(skipReasonFor("local", "test/e2e/reference-story.test.ts")).toBeUndefined();
    expect(skipReasonFor("local", "test/cluster-tests/local-node.test.ts")).toBeUndefined();
  });

  it("runs the portable files on kind, k3s and kubeconfig, and skips the others saying they need the local node", () => {
    for (const target of ["kind", "k3s", "kubeconfig"] as const) {
      for (const file of PORTABLE_FILES) expect(skipReasonFor(target, file)).toBeUndefined();
      expect(skipReasonFor(target, "test/e2e/reference-story.test.ts")).toMatch(
        new RegExp(`^target ${target}: test/e2e/reference-story.test.ts needs the local node`),
      );
    }
  });

  it("skips every file, portable or not, with the reason the target is unavailable", () => {
    const reason =
      "skipped: no container engine answers (Could not find a working container runtime strategy)";
    for (const target of ["kind", "k3s"] as const) {
      expect(skipReasonFor(target, PORTABLE_FILES[0]!, reason)).toBe(reason);
      expect(skipReasonFor(target, "test/e2e/gitops.test.ts", reason)).toBe(reason);
    }
  });
});

describe("containerTargetUnavailable", () => {
  const problem = "Could not find a working container runtime strategy";

  it("makes kind and k3s, the targets that need a container engine, unavailable with the engine's error when none answers", () => {
    expect(CONTAINER_TARGETS).toEqual(["kind", "k3s"]);
    for (const target of ["kind", "k3s"] as const) {
      expect(containerTargetUnavailable(target, problem)).toBe(
        "skipped: no container engine answers (Could not find a working container runtime strategy)",
      );
    }
  });

  it("leaves kind and k3s available when an engine answers", () => {
    expect(containerTargetUnavailable("kind", undefined)).toBeUndefined();
    expect(containerTargetUnavailable("k3s", undefined)).toBeUndefined();
  });

  it("never makes local or kubeconfig unavailable for want of an engine", () => {
    expect(containerTargetUnavailable("local", problem)).toBeUndefined();
    expect(containerTargetUnavailable("kubeconfig", problem)).toBeUndefined();
  });

  it("skips every file of kind and of k3s with that reason, through the runner's rule", () => {
    for (const target of ["kind", "k3s"] as const) {
      const reason = containerTargetUnavailable(target, problem);
      expect(reason).toBeDefined();
      for (const file of [...PORTABLE_FILES, "test/e2e/reference-story.test.ts"]) {
        expect(skipReasonFor(target, file, reason)).toBe(reason);
      }
    }
  });
});

describe("impersonatingKubeconfig", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** A kubeconfig like a real cluster's: two contexts, client certificates as files beside it. */
  function sourceKubeconfig(): string {
    dir = mkdtempSync(join(tmpdir(), "target-test-"));
    const path = join(dir, "config");
    writeFileSync(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "  - name: prod",
        "    cluster: { server: https://prod.example:6443, certificate-authority: pki/ca.crt }",
        "  - name: dev",
        "    cluster: { server: https://dev.example:6443 }",
        "users:",
        "  - name: prod-admin",
        "    user: { client-certificate: pki/admin.crt, client-key: /abs/admin.key }",
        "  - name: dev-admin",
        "    user: { token: dev-token }",
        "contexts:",
        "  - name: prod",
        "    context: { cluster: prod, user: prod-admin }",
        "  - name: dev",
        "    context: { cluster: dev, user: dev-admin }",
        "current-context: dev",
        "",
      ].join("\n"),
    );
    return path;
  }

  it("gives admin the chosen context's credentials and the personas the same credentials impersonating them", () => {
    const source = sourceKubeconfig();
    const config = new KubeConfig();
    config.loadFromString(impersonatingKubeconfig(source, "prod"));
    expect(config.getContexts().map((c) => c.name)).toEqual([
      "admin",
      "alice",
      "bob",
      "carol",
      "gatehouse-gateway",
      "gatehouse-controller",
    ]);
    expect(config.getCurrentContext()).toBe("admin");
    expect(config.getCluster("gatehouse-e2e")).toMatchObject({
      server: "https://prod.example:6443",
      caFile: join(dir!, "pki/ca.crt"),
    });
    expect(config.getUser("admin")).toMatchObject({
      certFile: join(dir!, "pki/admin.crt"),
      keyFile: "/abs/admin.key",
    });
    expect(config.getUser("admin")?.impersonateUser ?? undefined).toBeUndefined();
    expect(config.getUser("alice")).toMatchObject({
      certFile: join(dir!, "pki/admin.crt"),
      impersonateUser: "alice",
    });
    expect(config.getUser("gatehouse-gateway")?.impersonateUser).toBe(GATEWAY_SERVICE_ACCOUNT);
    expect(config.getUser("gatehouse-controller")?.impersonateUser).toBe(CONTROLLER_SERVICE_ACCOUNT);
  });

  it("names the personas' groups as kubectl's as-groups: bob planners, carol approvers, alice none", () => {
    const users = (
      parse(impersonatingKubeconfig(sourceKubeconfig())) as {
        users: Array<{ name: string; user: Record<string, unknown> }>;
      }
    ).users;
    const byName = Object.fromEntries(users.map((u) => [u.name, u.user]));
    expect(byName.alice).toEqual({ token: "dev-token", as: "alice" });
    expect(byName.bob).toEqual({ token: "dev-token", as: "bob", "as-groups": ["planners"] });
    expect(byName.carol).toEqual({ token: "dev-token", as: "carol", "as-groups": ["approvers"] });
  });

  it("puts the given server in place of the cluster's address", () => {
    const config = new KubeConfig();
    config.loadFromString(impersonatingKubeconfig(sourceKubeconfig(), undefined, "https://127.0.0.1:32768"));
    expect(config.getCluster("gatehouse-e2e")?.server).toBe("https://127.0.0.1:32768");
  });

  it("refuses a context the kubeconfig does not have", () => {
    expect(() => impersonatingKubeconfig(sourceKubeconfig(), "staging")).toThrow(/no usable context staging/);
  });
});
