import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, configFromEnvironment, endpointFor } from "./config.ts";
import { Environment } from "./config-environment.ts";
import { defaultSessionCeilings } from "./core/limits.ts";

/** The one variable without a default: the runtime login's URL. */
const DATABASE = { DATABASE_URL: "postgres://gatehouse_controller_a:p@db:5432/gatehouse" };

describe("operator configuration", () => {
  it("starts from the defaults: default ceilings, no approval floor, no failpoints", () => {
    const config = configFromEnvironment(DATABASE);
    expect(config.sessionCeilings).toEqual(defaultSessionCeilings);
    expect(config.execution).toEqual({
      providerDeadlineMs: 30_000,
      leaseGraceMs: 30_000,
      approvalTtlSeconds: 3_600,
      requestRecordGraceMs: 60_000,
    });
    expect(config.failpoints.size).toBe(0);
    expect(config.gatewayPostgresPoolSize).toBe(10);
  });

  it("reads ceilings, the approval floor, deadlines and failpoints", () => {
    const config = configFromEnvironment({
      ...DATABASE,
      SESSION_CEILINGS: '{"maxWrites": 2, "timeoutSeconds": 600}',
      APPROVAL_FLOOR: '{"write": "Required"}',
      PROVIDER_DEADLINE_MS: "3000",
      EXECUTION_LEASE_GRACE_MS: "2000",
      APPROVAL_TTL_SECONDS: "5",
      APPROVAL_REQUEST_GRACE_MS: "4000",
      GATEHOUSE_FAILPOINTS: "dispatch.after-claim=exit, approval.after-audit=block",
    });
    expect(config.sessionCeilings).toEqual({ ...defaultSessionCeilings, maxWrites: 2, timeoutSeconds: 600 });
    expect(config.execution).toEqual({
      providerDeadlineMs: 3000,
      leaseGraceMs: 2000,
      approvalTtlSeconds: 5,
      requestRecordGraceMs: 4000,
      approvalFloor: { write: "Required" },
    });
    expect(Object.fromEntries(config.failpoints)).toEqual({
      "dispatch.after-claim": "exit",
      "approval.after-audit": "block",
    });
  });

  it("refuses failpoints in the production image", () => {
    expect(() =>
      configFromEnvironment({
        ...DATABASE,
        NODE_ENV: "production",
        GATEHOUSE_FAILPOINTS: "dispatch.after-claim=exit",
      }),
    ).toThrow(/GATEHOUSE_FAILPOINTS: test-only failpoints are refused in the production image/);
  });

  it.each([
    ["SESSION_CEILINGS", "{nope"],
    ["SESSION_CEILINGS", '{"maxWritez": 2}'],
    ["APPROVAL_FLOOR", '{"write": "Sometimes"}'],
    ["GATEHOUSE_FAILPOINTS", "before-lunch=exit"],
    ["GATEHOUSE_FAILPOINTS", "dispatch.after-claim"],
    ["PROVIDER_DEADLINE_MS", "soon"],
    ["GATEWAY_POSTGRES_POOL_SIZE", "1"],
    ["GATEWAY_POSTGRES_POOL_SIZE", "501"],
    ["GATEWAY_POSTGRES_POOL_SIZE", "12.5"],
    ["GATEWAY_POSTGRES_POOL_SIZE", "many"],
    ["OFF_CLUSTER_GATEWAYS", '[{"cidr": "gateway.example", "port": 8443}]'],
    ["OFF_CLUSTER_GATEWAYS", '[{"cidr": "10.0.0.5/32", "port": 0}]'],
    ["OFF_CLUSTER_GATEWAYS", '[{"cidr": "10.0.0.5/32", "port": 8443, "except": []}]'],
    [
      "MODEL_ENDPOINTS",
      '[{"name": "openai", "baseURL": "https://api.openai.com/v1", "apiKey": "sk-inline"}]',
    ],
    [
      "MODEL_ENDPOINTS",
      '[{"name": "openai", "baseURL": "https://api.openai.com/v1", "keySecretRef": {"name": "k"}}]',
    ],
  ])("refuses a bad %s, naming it", (variable, value) => {
    expect(() => configFromEnvironment({ ...DATABASE, [variable]: value })).toThrow(ConfigError);
    expect(() => configFromEnvironment({ ...DATABASE, [variable]: value })).toThrow(variable);
  });

  it("reads the gateway's pool size, refusing one below 2 or above 500 with the bound and the chart value", () => {
    expect(
      configFromEnvironment({ ...DATABASE, GATEWAY_POSTGRES_POOL_SIZE: "40" }).gatewayPostgresPoolSize,
    ).toBe(40);
    expect(() => configFromEnvironment({ ...DATABASE, GATEWAY_POSTGRES_POOL_SIZE: "1" })).toThrow(
      /^GATEWAY_POSTGRES_POOL_SIZE is invalid \(Too small: expected number to be >=2\).*chart value gateway\.database\.poolSize/,
    );
    expect(() => configFromEnvironment({ ...DATABASE, GATEWAY_POSTGRES_POOL_SIZE: "501" })).toThrow(
      /^GATEWAY_POSTGRES_POOL_SIZE is invalid \(Too big: expected number to be <=500\)/,
    );
  });

  it("reads OFF_CLUSTER_GATEWAYS as address blocks and ports, none by default", () => {
    expect(configFromEnvironment(DATABASE).offClusterGateways).toEqual([]);
    const blocks = [
      { cidr: "10.0.0.5/32", port: 8443 },
      { cidr: "fd00::/64", port: 443 },
    ];
    expect(
      configFromEnvironment({ ...DATABASE, OFF_CLUSTER_GATEWAYS: JSON.stringify(blocks) }).offClusterGateways,
    ).toEqual(blocks);
  });

  it("refuses to start without DATABASE_URL, the runtime login, naming it and the migrate program's docs", () => {
    expect(() => configFromEnvironment({})).toThrow(
      /^DATABASE_URL is required: .*runtime login.*docs\/upgrading\.md/,
    );
    expect(() => configFromEnvironment({ DATABASE_URL: "mysql://x@y/z" })).toThrow(
      /^DATABASE_URL is invalid/,
    );
  });

  it("names each bad variable on its own line with where to set it, never echoing the value", () => {
    let message = "";
    try {
      configFromEnvironment({ ...DATABASE, GATEWAY_PORT: "http", PROVIDER_DEADLINE_MS: "soon" });
    } catch (error) {
      message = (error as Error).message;
    }
    const lines = message.split("\n");
    expect(lines.map((line) => line.split(" ")[0]).sort()).toEqual(["GATEWAY_PORT", "PROVIDER_DEADLINE_MS"]);
    for (const line of lines) {
      expect(line).toMatch(
        /^[A-Z_]+ is invalid \(.+\): set [A-Z_]+ in the gateway's or controller's container environment/,
      );
      expect(line).not.toContain("soon");
    }
  });

  it("reads model endpoints with the Secret of their key; the default serves sessions without endpointRef", () => {
    const config = configFromEnvironment({
      ...DATABASE,
      MODEL_ENDPOINTS: JSON.stringify([
        { name: "scripted", baseURL: "http://10.88.0.1:9000/v1" },
        {
          name: "openai",
          baseURL: "https://api.openai.com/v1",
          keySecretRef: { name: "gatehouse-model-keys", key: "openai" },
          models: ["gpt-4.1"],
          default: true,
        },
      ]),
    });
    expect(config.operatorNamespace).toBe("gatehouse-system");
    expect(endpointFor(config, undefined)).toEqual({
      name: "openai",
      baseURL: "https://api.openai.com/v1",
      keySecretRef: { name: "gatehouse-model-keys", key: "openai" },
      models: ["gpt-4.1"],
      default: true,
    });
    expect(endpointFor(config, "scripted")).toEqual({
      name: "scripted",
      baseURL: "http://10.88.0.1:9000/v1",
      models: [],
      default: false,
    });
    expect(endpointFor(config, "elsewhere")).toBeUndefined();
  });

  it("takes every variable the chart's Deployment sets from the one schema, and each says what it means", () => {
    const deployment = readFileSync(
      new URL("../../charts/gatehouse/templates/deployment.yaml", import.meta.url),
      "utf8",
    );
    const set = [...deployment.matchAll(/\bname: ([A-Z][A-Z0-9_]+)\b/g)].map((match) => match[1]);
    expect(set.length).toBeGreaterThan(20);
    // NODE_OPTIONS and MALLOC_ARENA_MAX configure Node and glibc (the chart's <component>.nodeOptions,
    // .mallocArenaMax), not the operator.
    const runtime = new Set(["NODE_OPTIONS", "MALLOC_ARENA_MAX"]);
    expect(set.filter((name) => !runtime.has(name!) && !(name! in Environment.shape))).toEqual([]);
    const undescribed = Object.entries(Environment.shape).filter(([, field]) => !field.description);
    expect(undescribed.map(([name]) => name)).toEqual([]);
  });

  it("names in each variable's description the default it parses to", () => {
    const wrong: string[] = [];
    for (const [name, field] of Object.entries(Environment.shape)) {
      const parsed = field.safeParse(undefined);
      if (!parsed.success || !["string", "number"].includes(typeof parsed.data)) continue;
      const value = String(parsed.data);
      const says = [`default ${value}`, `default and maximum ${value}`, `${value} (default)`];
      if (!says.some((words) => field.description?.includes(words))) wrong.push(`${name}: ${value}`);
    }
    expect(wrong).toEqual([]);
  });

  it("carries every variable into the configuration: setting any one of them changes it", () => {
    const changed: Record<keyof typeof Environment.shape, string> = {
      KUBECONFIG: "/k/config",
      KUBE_CONTEXT: "admin",
      LOCAL_NODE_ROOT: "/var/lib/node/root",
      DATABASE_URL: "postgres://gatehouse_gateway_b:p@db:5432/gatehouse",
      GATEWAY_HOST: "127.0.0.1",
      GATEWAY_PORT: "9443",
      TRANSCRIPTS_API_PORT: "11443",
      TRANSCRIPTS_API_TLS_CERT_FILE: "/tls/tls.crt",
      TRANSCRIPTS_API_TLS_KEY_FILE: "/tls/tls.key",
      GATEWAY_URL: "http://gateway.example:9443",
      OFF_CLUSTER_GATEWAYS: '[{"cidr": "10.0.0.5/32", "port": 8443}]',
      MODEL_ENDPOINTS: '[{"name": "scripted", "baseURL": "http://10.88.0.1:9000/v1"}]',
      AGENT_IMAGE: "gatehouse/agent:1.2.3",
      AGENT_POD_RETRIES: "5",
      AGENT_RESOURCES: '{"limits": {"memory": "1Gi"}}',
      PROVIDER_PORT: "9090",
      HEALTH_HOST: "127.0.0.2",
      HEALTH_PORT: "0",
      LEADER_ELECTION: "false",
      LEADER_ELECTION_NAMESPACE: "leases",
      POD_NAMESPACE: "gh-system",
      WATCH_NAMESPACES: "plant-a, plant-b",
      GATEWAY_SERVICE_ACCOUNT: "gh-gateway",
      POD_NAME: "gatehouse-controller-abc12",
      LOG_LEVEL: "debug",
      GRANT_TTL_SECONDS: "30",
      GRANT_KEY_ROTATION_SECONDS: "3600",
      GRANT_KEY_ACTIVATION_SECONDS: "10",
      GRANT_KEYS_RESYNC_SECONDS: "0.5",
      SESSION_CEILINGS: '{"maxTurns": 3}',
      APPROVAL_FLOOR: '{"draft": "Required"}',
      GATEWAY_LIMITS: '{"burst": 100}',
      GATEWAY_POSTGRES_POOL_SIZE: "24",
      PROVIDER_DEADLINE_MS: "3000",
      EXECUTION_LEASE_GRACE_MS: "0",
      APPROVAL_TTL_SECONDS: "5",
      APPROVAL_REQUEST_GRACE_MS: "4000",
      GATEHOUSE_FAILPOINTS: "dispatch.after-claim=exit",
      AUDIT_CHECKPOINT_INTERVAL_SECONDS: "0.25",
    };
    const defaults = configFromEnvironment(DATABASE);
    const ignored = Object.entries(changed)
      .filter(([name, value]) =>
        isDeepStrictEqual(configFromEnvironment({ ...DATABASE, [name]: value }), defaults),
      )
      .map(([name]) => name);
    expect(ignored).toEqual([]);
  });
});
