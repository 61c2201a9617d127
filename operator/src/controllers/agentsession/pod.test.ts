import { describe, expect, it } from "vitest";
import type { AgentSession, ProviderInstance } from "../../api/kinds.ts";
import { agentPodFor, agentPodName } from "./pod.ts";
import { sidecarsFor } from "./sidecars.ts";

const session: AgentSession = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "AgentSession",
  metadata: { name: "push-plan", namespace: "plant-a", uid: "0b7e2c1e-uid" },
  spec: {
    subject: { user: "alice", groups: [] },
    engine: "builtin",
    model: { name: "scripted/reference-story" },
    instructions: "",
    messages: [{ text: "Push the plan." }],
  },
};
const pod = agentPodFor(session, 1, {
  image: "gatehouse/agent:dev",
  gatewayUrl: "http://10.88.0.1:8443",
  remainingSeconds: 1799.6,
  resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
});
const container = pod.spec!.containers[0]!;

describe("agentPodFor", () => {
  it("names the pod deterministically and makes the session its controller owner", () => {
    expect(pod.metadata?.name).toBe(agentPodName(session));
    expect(pod.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: "AgentSession",
        name: "push-plan",
        uid: "0b7e2c1e-uid",
        controller: true,
      }),
    ]);
    expect(pod.metadata?.labels?.["gatehouse.dev/session-uid"]).toBe("0b7e2c1e-uid");
  });

  it("is hardened for Pod Security restricted", () => {
    expect(pod.spec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container.resources?.limits).toBeDefined();
  });

  it("mounts no Kubernetes API token, only a projected token for the gatehouse audience", () => {
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.serviceAccountName).toBe("gatehouse-agent");
    const sources = pod.spec?.volumes?.[0]?.projected?.sources;
    expect(sources).toEqual([
      { serviceAccountToken: { audience: "gatehouse", expirationSeconds: 600, path: "token" } },
    ]);
    expect(container.volumeMounts).toEqual([
      { name: "gatehouse-token", mountPath: "/var/run/secrets/gatehouse", readOnly: true },
    ]);
  });

  it("bounds the pod by the remaining session timeout and never restarts it", () => {
    expect(pod.spec?.activeDeadlineSeconds).toBe(1799);
    expect(pod.spec?.restartPolicy).toBe("Never");
  });

  it("tells the agent where the gateway is and holds no secret", () => {
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    expect(env.GATEHOUSE_GATEWAY_URL).toBe("http://10.88.0.1:8443");
    expect(Object.keys(env).some((k) => /KEY|SECRET|PASSWORD/.test(k))).toBe(false);
  });

  it("sends the agent's model requests to the gateway's model proxy, never to the endpoint", () => {
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    expect(env.MODEL_BASE_URL).toBe("http://10.88.0.1:8443/v1/model");
    expect(container.env?.some((e) => e.valueFrom)).toBe(false);
  });
});

describe("an agent pod with a Sidecar provider holding credentials", () => {
  const provider = {
    apiVersion: "gatehouse.dev/v1alpha1",
    kind: "ProviderInstance",
    metadata: { name: "fx", namespace: "plant-a", uid: "u-fx" },
    spec: {
      type: "fixture",
      image: "gatehouse/provider-fixture:dev",
      placement: "Sidecar",
      auth: { kind: "apikey", secretRef: { name: "fx-credentials" } },
    },
  } as unknown as ProviderInstance;
  const withSidecar = agentPodFor(session, 1, {
    image: "gatehouse/agent:dev",
    gatewayUrl: "http://10.88.0.1:8443",
    remainingSeconds: 600,
    resources: {},
    sidecars: sidecarsFor([provider], "http://10.88.0.1:8443", "uid-1"),
  });
  const sidecar = withSidecar.spec!.initContainers!.find((c) => c.name === "provider-fx")!;
  const volume = withSidecar.spec!.volumes!.find((v) => v.name === "provider-fx-credentials")!;

  it("gives the credential files to the pod's fsGroup, group-readable and closed to others", () => {
    expect(withSidecar.spec?.securityContext?.fsGroup).toBe(65532);
    expect(volume.secret).toEqual({ secretName: "fx-credentials", defaultMode: 0o440 });
    // The kubelet writes them as root: without the group bit the non-root sidecar could not read them.
    expect(volume.secret!.defaultMode! & 0o040).toBe(0o040);
    expect(volume.secret!.defaultMode! & 0o007).toBe(0);
  });

  it("runs the sidecar as the fsGroup's user and group, so group read is what it needs", () => {
    const effective = { ...withSidecar.spec?.securityContext, ...sidecar.securityContext };
    expect(effective.runAsNonRoot).toBe(true);
    expect(effective.runAsUser).toBe(withSidecar.spec?.securityContext?.fsGroup);
    expect(effective.runAsGroup).toBe(withSidecar.spec?.securityContext?.fsGroup);
    expect(sidecar.volumeMounts).toEqual([
      { name: "provider-fx-credentials", mountPath: "/var/run/secrets/gatehouse/provider", readOnly: true },
    ]);
  });
});

describe("the engine the agent pod runs (spec.engine)", () => {
  const podOf = (engine: "builtin" | "pi" | "codex") =>
    agentPodFor({ ...session, spec: { ...session.spec, engine } }, 1, {
      image: "gatehouse/agent:dev",
      gatewayUrl: "http://10.88.0.1:8443",
      remainingSeconds: 600,
      resources: {},
    });
  const ROWS = [
    { engine: "builtin", dir: undefined, mounts: ["gatehouse-token"], volumes: ["gatehouse-token"] },
    {
      engine: "pi",
      dir: "/tmp/gatehouse-engine",
      mounts: ["gatehouse-token", "engine"],
      volumes: ["gatehouse-token", "engine"],
    },
    {
      engine: "codex",
      dir: "/tmp/gatehouse-engine",
      mounts: ["gatehouse-token", "engine"],
      volumes: ["gatehouse-token", "engine"],
    },
  ] as const;

  it.each(ROWS)("$engine: GATEHOUSE_ENGINE, the engine directory, its volume and mount", (row) => {
    const pod = podOf(row.engine);
    const agent = pod.spec!.containers[0]!;
    const env = Object.fromEntries((agent.env ?? []).map((e) => [e.name, e.value]));
    expect(env.GATEHOUSE_ENGINE).toBe(row.engine);
    expect(env.GATEHOUSE_ENGINE_DIR).toBe(row.dir);
    expect(agent.volumeMounts?.map((m) => m.name)).toEqual(row.mounts);
    expect(pod.spec?.volumes?.map((v) => v.name)).toEqual(row.volumes);
    // Whatever the engine, the root filesystem stays read-only and the pod holds no secret.
    expect(agent.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(agent.securityContext?.runAsNonRoot).toBe(true);
    expect(Object.keys(env).some((k) => /KEY|SECRET|PASSWORD/.test(k))).toBe(false);
  });

  it.each(["pi", "codex"] as const)(
    "%s: writes only in a size-limited emptyDir mounted where GATEHOUSE_ENGINE_DIR says",
    (engine) => {
      const pod = podOf(engine);
      const agent = pod.spec!.containers[0]!;
      const env = Object.fromEntries((agent.env ?? []).map((e) => [e.name, e.value]));
      const volume = pod.spec!.volumes!.find((v) => v.name === "engine")!;
      expect(volume).toEqual({ name: "engine", emptyDir: { sizeLimit: "256Mi" } });
      expect(agent.volumeMounts?.find((m) => m.name === "engine")).toEqual({
        name: "engine",
        mountPath: env.GATEHOUSE_ENGINE_DIR,
      });
      // The same labels as a builtin pod: the agent NetworkPolicy (gateway and DNS only) selects it alike.
      expect(pod.metadata?.labels).toEqual(podOf("builtin").metadata?.labels);
      // The token's mount stays read-only; only the engine's directory is writable.
      expect(agent.volumeMounts?.filter((m) => !m.readOnly).map((m) => m.mountPath)).toEqual([
        "/tmp/gatehouse-engine",
      ]);
    },
  );

  it("a session without spec.engine (stored before the field was defaulted) runs builtin", () => {
    const { engine: _, ...spec } = session.spec;
    const pod = agentPodFor({ ...session, spec } as AgentSession, 1, {
      image: "gatehouse/agent:dev",
      gatewayUrl: "http://10.88.0.1:8443",
      remainingSeconds: 600,
      resources: {},
    });
    expect(pod.spec!.containers[0]!.env).toContainEqual({ name: "GATEHOUSE_ENGINE", value: "builtin" });
    expect(pod.spec!.volumes!.map((v) => v.name)).toEqual(["gatehouse-token"]);
  });
});

describe("an external session's agent pod (spec.engine external)", () => {
  const IMAGE =
    "registry.example/agents/mcp-agent@sha256:1111111111111111111111111111111111111111111111111111111111111111";
  const settings = {
    image: "gatehouse/agent:dev",
    gatewayUrl: "http://10.88.0.1:8443/",
    remainingSeconds: 600,
    resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { cpu: "1", memory: "512Mi" } },
  };
  const externalPod = agentPodFor(
    { ...session, spec: { ...session.spec, engine: "external", agent: { image: IMAGE } } },
    1,
    settings,
  );
  const builtinPod = agentPodFor(session, 1, settings);
  const agent = externalPod.spec!.containers[0]!;

  it("runs the named image with its own entrypoint, not the Gatehouse agent image", () => {
    expect(agent.image).toBe(IMAGE);
    expect(agent.command).toBeUndefined();
    expect(agent.args).toBeUndefined();
  });

  it("gets exactly the URLs of the gateway, its MCP endpoint and its model proxy, the token path and a directory: no key, no credential", () => {
    expect(agent.env).toEqual([
      { name: "GATEHOUSE_ENGINE", value: "external" },
      { name: "GATEHOUSE_GATEWAY_URL", value: "http://10.88.0.1:8443/" },
      { name: "GATEHOUSE_MCP_URL", value: "http://10.88.0.1:8443/mcp" },
      { name: "GATEHOUSE_TOKEN_FILE", value: "/var/run/secrets/gatehouse/token" },
      { name: "MODEL_BASE_URL", value: "http://10.88.0.1:8443/v1/model" },
      { name: "OPENAI_BASE_URL", value: "http://10.88.0.1:8443/v1/model" },
      { name: "GATEHOUSE_ENGINE_DIR", value: "/tmp/gatehouse-engine" },
    ]);
    expect(agent.envFrom).toBeUndefined();
  });

  it("mounts no Secret: only the projected token (read-only) and the size-limited emptyDir", () => {
    expect(externalPod.spec!.volumes).toEqual([
      {
        name: "gatehouse-token",
        projected: {
          sources: [
            { serviceAccountToken: { audience: "gatehouse", expirationSeconds: 600, path: "token" } },
          ],
        },
      },
      { name: "engine", emptyDir: { sizeLimit: "256Mi" } },
    ]);
    expect(agent.volumeMounts).toEqual([
      { name: "gatehouse-token", mountPath: "/var/run/secrets/gatehouse", readOnly: true },
      { name: "engine", mountPath: "/tmp/gatehouse-engine" },
    ]);
  });

  it("is the same hardened pod as a builtin one: securityContexts, resources, labels, token, deadline", () => {
    expect(externalPod.spec!.securityContext).toEqual(builtinPod.spec!.securityContext);
    expect(agent.securityContext).toEqual(builtinPod.spec!.containers[0]!.securityContext);
    expect(agent.resources).toEqual(settings.resources);
    // The agent NetworkPolicy (gateway and DNS only) selects it by these labels, as any agent pod.
    expect(externalPod.metadata!.labels).toEqual(builtinPod.metadata!.labels);
    expect(externalPod.spec!.automountServiceAccountToken).toBe(false);
    expect(externalPod.spec!.serviceAccountName).toBe(builtinPod.spec!.serviceAccountName);
    expect(externalPod.spec!.enableServiceLinks).toBe(false);
    expect(externalPod.spec!.activeDeadlineSeconds).toBe(600);
  });
});
