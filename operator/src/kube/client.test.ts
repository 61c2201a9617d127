import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadKubeConfig } from "./client.ts";

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
