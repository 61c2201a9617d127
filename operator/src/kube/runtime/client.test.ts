import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiException, HttpMethod, RequestContext } from "@kubernetes/client-node";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isNamespaceTerminating, loadKubeConfig } from "./client.ts";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("loadKubeConfig", () => {
  it("reads the in-cluster ServiceAccount files under the mount root when one is given", async () => {
    const root = mkdtempSync(join(tmpdir(), "gatehouse-mount-root-"));
    const dir = join(root, "var/run/secrets/kubernetes.io/serviceaccount");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "token"), "the-pod-token");
    writeFileSync(join(dir, "ca.crt"), "not a real CA");
    writeFileSync(join(dir, "namespace"), "gatehouse-system");
    vi.stubEnv("KUBECONFIG", "");
    vi.stubEnv("KUBERNETES_SERVICE_HOST", "10.88.0.1");
    vi.stubEnv("KUBERNETES_SERVICE_PORT", "6443");

    const config = loadKubeConfig(undefined, undefined, "test-agent", root);

    expect(config.getCurrentCluster()).toMatchObject({
      server: "https://10.88.0.1:6443",
      caFile: join(dir, "ca.crt"),
    });
    expect(config.getContextObject(config.getCurrentContext())?.namespace).toBe("gatehouse-system");
    const headers: Record<string, string> = {};
    await config.applyToHTTPSOptions({ headers });
    expect(headers.Authorization).toBe("Bearer the-pod-token");
  });
});

describe("the connection pool of one KubeConfig", () => {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  function kubeconfig(ca: string): string {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-kubeconfig-"));
    const file = join(dir, "config");
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          { name: "c", cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": b64(ca) } },
        ],
        users: [
          { name: "u", user: { "client-certificate-data": b64("cert"), "client-key-data": b64("key") } },
        ],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    return file;
  }
  const dispatcherOf = async (config: ReturnType<typeof loadKubeConfig>) => {
    const context = new RequestContext("https://127.0.0.1:6443/api/v1/pods", HttpMethod.GET);
    await config.applySecurityAuthentication(context);
    return context.getDispatcher();
  };

  it("is one Agent for every request (client-node builds one per request: a TLS connection each)", async () => {
    const config = loadKubeConfig(kubeconfig("ca-1"), undefined, "test-agent");
    const first = await dispatcherOf(config);
    expect(first).toBeDefined();
    expect(await dispatcherOf(config)).toBe(first);
    expect(await dispatcherOf(config)).toBe(first);
  });

  it("is a new Agent once the TLS material changes (a rotated CA or client certificate)", async () => {
    const file = kubeconfig("ca-1");
    const config = loadKubeConfig(file, undefined, "test-agent");
    const before = await dispatcherOf(config);
    config.loadFromFile(kubeconfig("ca-2"));
    const after = await dispatcherOf(config);
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(await dispatcherOf(config)).toBe(after);
  });
});

/** The 403 the NamespaceLifecycle admission plugin answers to a create in a namespace being deleted. */
function namespaceTerminatingError(namespace: string): ApiException<string> {
  const status = {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message: `networkpolicies "gatehouse-agent" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    reason: "Forbidden",
    details: {
      name: "gatehouse-agent",
      group: "networking.k8s.io",
      kind: "networkpolicies",
      causes: [
        {
          reason: "NamespaceTerminating",
          message: `namespace ${namespace} is being terminated`,
          field: "metadata.namespace",
        },
      ],
    },
    code: 403,
  };
  return new ApiException(403, "Forbidden", JSON.stringify(status), {});
}

describe("isNamespaceTerminating", () => {
  it("recognises the API server's refusal to create in a namespace being deleted", () => {
    expect(isNamespaceTerminating(namespaceTerminatingError("plant-b"))).toBe(true);
  });

  it("is false for any other refusal", () => {
    const forbidden = JSON.stringify({ kind: "Status", reason: "Forbidden", code: 403, message: "RBAC" });
    expect(isNamespaceTerminating(new ApiException(403, "Forbidden", forbidden, {}))).toBe(false);
    expect(isNamespaceTerminating(new ApiException(409, "Conflict", "{}", {}))).toBe(false);
    expect(isNamespaceTerminating(new Error("namespace plant-b is being terminated"))).toBe(false);
  });
});
