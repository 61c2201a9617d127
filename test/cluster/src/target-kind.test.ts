import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  dockerHostOf,
  isLoopbackHost,
  kindClusterConfig,
  kindClusterName,
  kindCreateArgs,
  kindServerFor,
} from "./target-kind.ts";

describe("dockerHostOf", () => {
  it("names a socket as unix:// and a TCP engine as tcp://host:port", () => {
    expect(dockerHostOf({ socketPath: "/var/run/docker.sock" })).toBe("unix:///var/run/docker.sock");
    expect(dockerHostOf({ host: "docker", port: "2375", protocol: "http" })).toBe("tcp://docker:2375");
    expect(dockerHostOf({ host: "fd00::5", port: 2376, protocol: "https" })).toBe("tcp://[fd00::5]:2376");
  });

  it("uses Docker's default ports when the connection names none", () => {
    expect(dockerHostOf({ host: "docker", protocol: "http" })).toBe("tcp://docker:2375");
    expect(dockerHostOf({ host: "docker", protocol: "https" })).toBe("tcp://docker:2376");
  });

  it("refuses a connection that names neither a socket nor a host", () => {
    expect(() => dockerHostOf({})).toThrow(/neither a socket path nor a host/);
  });
});

describe("kindClusterConfig", () => {
  it("asks for one control-plane node and leaves kind's loopback API address alone on a local engine", () => {
    for (const host of ["localhost", "127.0.0.1", "::1"]) {
      expect(isLoopbackHost(host)).toBe(true);
      expect(parse(kindClusterConfig(host))).toEqual({
        kind: "Cluster",
        apiVersion: "kind.x-k8s.io/v1alpha4",
        nodes: [{ role: "control-plane" }],
      });
    }
  });

  it("publishes the API server on the remote engine's addresses and puts its host name in the certificate", () => {
    expect(isLoopbackHost("docker")).toBe(false);
    const config = parse(kindClusterConfig("docker")) as {
      networking: unknown;
      kubeadmConfigPatches: string[];
    };
    expect(config.networking).toEqual({ apiServerAddress: "0.0.0.0", apiServerPort: -1 });
    expect(config.kubeadmConfigPatches.map((patch) => parse(patch))).toEqual([
      { kind: "ClusterConfiguration", apiServer: { certSANs: ["docker"] } },
    ]);
  });
});

describe("kindServerFor", () => {
  const kubeconfig = (server: string) =>
    stringify({ clusters: [{ name: "kind-gatehouse-e2e-1", cluster: { server } }] });

  it("keeps kind's own address on a local engine", () => {
    expect(kindServerFor(kubeconfig("https://127.0.0.1:40123"), "localhost")).toBeUndefined();
  });

  it("points at the remote engine's host on the port kind published", () => {
    expect(kindServerFor(kubeconfig("https://0.0.0.0:32771"), "docker")).toBe("https://docker:32771");
    expect(kindServerFor(kubeconfig("https://0.0.0.0:32771"), "172.17.0.1")).toBe("https://172.17.0.1:32771");
  });

  it("refuses a kubeconfig without a server", () => {
    expect(() => kindServerFor(stringify({ clusters: [] }), "docker")).toThrow(/names no API server/);
  });
});

describe("kind create cluster", () => {
  it("names each cluster gatehouse-e2e-<random>, a valid kind cluster name", () => {
    const names = new Set([kindClusterName(), kindClusterName(), kindClusterName()]);
    expect(names.size).toBe(3);
    for (const name of names) expect(name).toMatch(/^gatehouse-e2e-[0-9a-f]{6}$/);
  });

  it("passes the name, the node image, the config, its own kubeconfig file and a 120 s wait", () => {
    expect(
      kindCreateArgs("gatehouse-e2e-0a1b2c", "kindest/node:v1.34.11", "/r/c.yaml", "/r/kubeconfig"),
    ).toEqual([
      "create",
      "cluster",
      "--name",
      "gatehouse-e2e-0a1b2c",
      "--image",
      "kindest/node:v1.34.11",
      "--config",
      "/r/c.yaml",
      "--kubeconfig",
      "/r/kubeconfig",
      "--wait",
      "120s",
    ]);
  });
});
