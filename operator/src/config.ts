/**
 * Operator configuration from the environment, parsed once with zod at the boundary. Each variable's
 * meaning is its `.describe()` text in `Environment` (config-environment.ts); `node operator/src/main.ts
 * --help` prints them all ({@link USAGE}).
 */
import { hostname } from "node:os";
import { type Effect, environmentProblems, environmentUsage, type HowToSet } from "@gatehouse/provider-sdk";
import { OPERATOR_NAMESPACE } from "./api/well-known.ts";
import { type AgentResources, Environment, type ModelEndpoint } from "./config-environment.ts";
import type { Failpoint, FailpointAction } from "./core/failpoints.ts";
import { defaultSessionCeilings, type SessionCeilings } from "./core/limits.ts";
import type { ApprovalMode } from "./core/ports.ts";

/** The `--help` text: every variable the operator reads, from the schema that parses them. */
export const USAGE = environmentUsage(
  "node operator/src/main.ts gateway | controller | migrate [--help]",
  "The Gatehouse programs: `gateway` serves agent pods (agent routes, model proxy, the invoke path) and the grant JWKS; `controller` runs the four controllers, approved dispatch and the audit witness on the Lease holder; both serve /healthz, /readyz and /metrics. Configured by environment variables only; they write no files and never migrate: run `migrate` (gatehouse-migrate) first.",
  [Environment],
);

/** The parsed configuration. */
export interface OperatorConfig {
  kubeconfig?: string;
  kubeContext?: string;
  /** Prefix of mounted paths (LOCAL_NODE_ROOT on the test cluster's local node); unset elsewhere. */
  mountRoot?: string;
  /** The runtime login's Postgres URL (DATABASE_URL). */
  databaseUrl: string;
  gatewayHost: string;
  gatewayPort: number;
  gatewayUrl: string;
  /** Gateways outside the cluster that agent pods may reach (OFF_CLUSTER_GATEWAYS): each address block on its TCP port. */
  offClusterGateways: OffClusterGateway[];
  /** The transcripts API's port and serving certificate files (the gateway requires both files). */
  transcriptsApi: { port: number; certFile?: string; keyFile?: string };
  modelEndpoints: ModelEndpoint[];
  /** The operator's own namespace (POD_NAMESPACE): where model key Secrets are read. */
  operatorNamespace: string;
  agentImage: string;
  agentPodRetries: number;
  agentResources: AgentResources;
  providerPort: number;
  healthHost: string;
  healthPort: number;
  leaderElection: { enabled: boolean; namespace: string; identityPrefix: string };
  /**
   * The served namespaces (WATCH_NAMESPACES): where both components watch pods and EndpointSlices and
   * the controller runs AgentSessions and ProviderInstances; empty = every namespace.
   */
  watchNamespaces: string[];
  /** The gateway's user name as the API server authenticates it (GATEWAY_SERVICE_ACCOUNT in POD_NAMESPACE). */
  gatewayUsername: string;
  logLevel: string;
  /** Provider grants and their signing keys (providers/grant-keys.ts); durations in seconds. */
  grants: {
    ttlSeconds: number;
    keyRotationSeconds: number;
    keyActivationSeconds: number;
    keysResyncSeconds: number;
  };
  /** The ceilings on every session's limits (core/limits.ts). */
  sessionCeilings: SessionCeilings;
  /** What one agent session may ask of the gateway (GATEWAY_LIMITS; defaults in DEFAULT_GATEWAY_LIMITS). */
  gatewayLimits: GatewayLimits;
  /**
   * Provider call deadline and execution lease grace, in milliseconds; the default Approval lifetime
   * and the grace for an Approval's request record (core/ports.ts CoreConfig).
   */
  execution: {
    providerDeadlineMs: number;
    leaseGraceMs: number;
    approvalTtlSeconds: number;
    requestRecordGraceMs: number;
    approvalFloor?: Partial<Record<Effect, ApprovalMode>>;
  };
  /** Test-only failpoints (core/failpoints.ts) and what each does; empty in production. */
  failpoints: ReadonlyMap<Failpoint, FailpointAction>;
  /** Audit checkpoints: period in milliseconds (what the witness keeps is by age, core/witness-retention.ts; DESIGN §6). */
  auditCheckpoints: { intervalMs: number };
}

/** A gateway outside the cluster: the address block agent pods reach it at, and its TCP port. */
export interface OffClusterGateway {
  cidr: string;
  port: number;
}

/**
 * What one agent session may ask of the gateway: its request rate and in-flight cap per replica
 * (gateway/session-limits.ts), the model proxy's body limit, and what its agent may write to its
 * transcript (gateway/server.ts).
 */
export interface GatewayLimits {
  requestsPerSecond: number;
  burst: number;
  maxInFlight: number;
  modelRequestBytes: number;
  eventsPerSession: number;
  eventBytesPerSession: number;
}

/** The defaults: far above what an agent does, far below what a flood needs. */
export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = {
  requestsPerSecond: 20,
  burst: 40,
  maxInFlight: 32,
  modelRequestBytes: 8 * 1024 * 1024,
  eventsPerSession: 5_000,
  eventBytesPerSession: 16 * 1024 * 1024,
};

/** A configuration the operator cannot start with; its message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Where the programs' variables come from: their containers' environment, which the chart fills from its values. */
const setInOperatorEnvironment: HowToSet = (name) =>
  `set ${name} in the gateway's or controller's container environment (with Helm: the chart value that sets it, or extraEnv)`;

/**
 * Parses the environment. Errors: throws a {@link ConfigError} with one line per bad variable naming
 * it, why and where to set it (the SDK's `environmentProblems`, as the providers print theirs).
 */
export function configFromEnvironment(env: NodeJS.ProcessEnv): OperatorConfig {
  const result = Environment.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      environmentProblems(result.error, Environment, env, setInOperatorEnvironment).join("\n"),
      {
        cause: result.error,
      },
    );
  }
  const parsed = result.data;
  if (parsed.GATEHOUSE_FAILPOINTS.size > 0 && env.NODE_ENV === "production") {
    // The operator image sets NODE_ENV=production: a failpoint there is a mistake, never a test.
    throw new ConfigError(
      "GATEHOUSE_FAILPOINTS: test-only failpoints are refused in the production image (NODE_ENV=production); unset it",
    );
  }
  return {
    kubeconfig: parsed.KUBECONFIG,
    kubeContext: parsed.KUBE_CONTEXT,
    mountRoot: parsed.LOCAL_NODE_ROOT,
    databaseUrl: parsed.DATABASE_URL,
    gatewayHost: parsed.GATEWAY_HOST,
    gatewayPort: parsed.GATEWAY_PORT,
    gatewayUrl: parsed.GATEWAY_URL ?? `http://${parsed.GATEWAY_HOST}:${parsed.GATEWAY_PORT}`,
    offClusterGateways: parsed.OFF_CLUSTER_GATEWAYS,
    transcriptsApi: {
      port: parsed.TRANSCRIPTS_API_PORT,
      ...(parsed.TRANSCRIPTS_API_TLS_CERT_FILE ? { certFile: parsed.TRANSCRIPTS_API_TLS_CERT_FILE } : {}),
      ...(parsed.TRANSCRIPTS_API_TLS_KEY_FILE ? { keyFile: parsed.TRANSCRIPTS_API_TLS_KEY_FILE } : {}),
    },
    modelEndpoints: parsed.MODEL_ENDPOINTS,
    operatorNamespace: parsed.POD_NAMESPACE ?? OPERATOR_NAMESPACE,
    agentImage: parsed.AGENT_IMAGE,
    agentPodRetries: parsed.AGENT_POD_RETRIES,
    agentResources: parsed.AGENT_RESOURCES,
    providerPort: parsed.PROVIDER_PORT,
    healthHost: parsed.HEALTH_HOST,
    healthPort: parsed.HEALTH_PORT,
    leaderElection: {
      enabled: parsed.LEADER_ELECTION === "true",
      namespace: parsed.LEADER_ELECTION_NAMESPACE ?? parsed.POD_NAMESPACE ?? "gatehouse-system",
      identityPrefix: parsed.POD_NAME ?? hostname(),
    },
    watchNamespaces: parsed.WATCH_NAMESPACES,
    gatewayUsername: `system:serviceaccount:${parsed.POD_NAMESPACE ?? OPERATOR_NAMESPACE}:${parsed.GATEWAY_SERVICE_ACCOUNT}`,
    logLevel: parsed.LOG_LEVEL,
    grants: {
      ttlSeconds: parsed.GRANT_TTL_SECONDS,
      keyRotationSeconds: parsed.GRANT_KEY_ROTATION_SECONDS,
      keyActivationSeconds: parsed.GRANT_KEY_ACTIVATION_SECONDS,
      keysResyncSeconds: parsed.GRANT_KEYS_RESYNC_SECONDS,
    },
    sessionCeilings: { ...defaultSessionCeilings, ...definedOnly(parsed.SESSION_CEILINGS) },
    gatewayLimits: { ...DEFAULT_GATEWAY_LIMITS, ...definedOnly(parsed.GATEWAY_LIMITS) },
    execution: {
      providerDeadlineMs: parsed.PROVIDER_DEADLINE_MS,
      leaseGraceMs: parsed.EXECUTION_LEASE_GRACE_MS,
      approvalTtlSeconds: parsed.APPROVAL_TTL_SECONDS,
      requestRecordGraceMs: parsed.APPROVAL_REQUEST_GRACE_MS,
      ...(Object.keys(parsed.APPROVAL_FLOOR).length > 0 ? { approvalFloor: parsed.APPROVAL_FLOOR } : {}),
    },
    failpoints: parsed.GATEHOUSE_FAILPOINTS,
    auditCheckpoints: {
      intervalMs: Math.round(parsed.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000),
    },
  };
}

/** The endpoint a session's model uses: its endpointRef, else the default (or only) endpoint. */
export function endpointFor(
  config: Pick<OperatorConfig, "modelEndpoints">,
  endpointRef: string | undefined,
): ModelEndpoint | undefined {
  if (endpointRef) return config.modelEndpoints.find((e) => e.name === endpointRef);
  return config.modelEndpoints.find((e) => e.default) ?? config.modelEndpoints[0];
}

/**
 * The settings `keys` name, and no others: what one part of a program (a controller, the gateway's
 * server) is given of the configuration, typed as `Pick<OperatorConfig, K>` so it follows the schema.
 */
export function settingsOf<K extends keyof OperatorConfig>(
  config: OperatorConfig,
  keys: readonly K[],
): Pick<OperatorConfig, K> {
  return Object.fromEntries(keys.map((key) => [key, config[key]])) as Pick<OperatorConfig, K>;
}

/** `object` without its undefined fields (zod's partial() types them as possibly undefined). */
function definedOnly<T extends object>(object: T): { [K in keyof T]-?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]-?: Exclude<T[K], undefined>;
  };
}
