/**
 * Operator configuration from the environment, parsed once with zod at the boundary: one schema,
 * {@link operatorConfigSchema} — the variables of `Environment` (config-environment.ts, each one's meaning
 * its `.describe()` text) transformed into the nested configuration the programs use, whose type
 * {@link OperatorConfig} is the transform's output, so the shape is written once. `node
 * operator/src/main.ts --help` prints every variable ({@link USAGE}). Each program part takes the settings
 * it needs, picked by {@link settingsOf} (controllers/manager.ts, programs/gateway.ts).
 */
import { hostname } from "node:os";
import { environmentProblems, environmentUsage, type HowToSet } from "@gatehouse/provider-sdk";
import type { z } from "zod";
import { OPERATOR_NAMESPACE } from "./api/well-known.ts";
import { Environment, type ModelEndpoint } from "./config-environment.ts";
import type { Failpoint, FailpointAction } from "./core/failpoints.ts";

export {
  DEFAULT_GATEWAY_LIMITS,
  DEFAULT_GATEWAY_POSTGRES_POOL_SIZE,
  type GatewayLimits,
  type OffClusterGateway,
} from "./config-environment.ts";

/** The `--help` text: every variable the operator reads, from the schema that parses them. */
export const USAGE = environmentUsage(
  "node operator/src/main.ts gateway | controller | migrate [--help]",
  "The Gatehouse programs: `gateway` serves agent pods (agent routes, model proxy, the invoke path) and the grant JWKS; `controller` runs the four controllers, approved dispatch and the audit witness on the Lease holder; both serve /healthz, /readyz and /metrics. Configured by environment variables only; they write no files and never migrate: run `migrate` (gatehouse-migrate) first.",
  [Environment],
);

/** The environment, parsed and transformed into the configuration; each setting names its variable. */
export const operatorConfigSchema = Environment.transform((env) => {
  const operatorNamespace = env.POD_NAMESPACE ?? OPERATOR_NAMESPACE;
  const failpoints: ReadonlyMap<Failpoint, FailpointAction> = env.GATEHOUSE_FAILPOINTS;
  return {
    /** KUBECONFIG; unset: the in-cluster ServiceAccount. */
    kubeconfig: env.KUBECONFIG,
    /** KUBE_CONTEXT: the context of the kubeconfig (unset: its current context). */
    kubeContext: env.KUBE_CONTEXT,
    /** Prefix of mounted paths (LOCAL_NODE_ROOT on the test cluster's local node); unset elsewhere. */
    mountRoot: env.LOCAL_NODE_ROOT,
    /** The runtime login's Postgres URL (DATABASE_URL). */
    databaseUrl: env.DATABASE_URL,
    /** Where the gateway listens (GATEWAY_HOST). */
    gatewayHost: env.GATEWAY_HOST,
    /** The gateway's port (GATEWAY_PORT). */
    gatewayPort: env.GATEWAY_PORT,
    /** The gateway URL agent pods and provider containers are given (GATEWAY_URL, else host and port). */
    gatewayUrl: env.GATEWAY_URL ?? `http://${env.GATEWAY_HOST}:${env.GATEWAY_PORT}`,
    /** Gateways outside the cluster that agent pods may reach (OFF_CLUSTER_GATEWAYS): each address block on its TCP port. */
    offClusterGateways: env.OFF_CLUSTER_GATEWAYS,
    /** The transcripts API's port and serving certificate files (the gateway requires both files). */
    transcriptsApi: {
      port: env.TRANSCRIPTS_API_PORT,
      ...(env.TRANSCRIPTS_API_TLS_CERT_FILE ? { certFile: env.TRANSCRIPTS_API_TLS_CERT_FILE } : {}),
      ...(env.TRANSCRIPTS_API_TLS_KEY_FILE ? { keyFile: env.TRANSCRIPTS_API_TLS_KEY_FILE } : {}),
    },
    /** Where the model proxy sends sessions' requests (MODEL_ENDPOINTS; {@link endpointFor} picks one). */
    modelEndpoints: env.MODEL_ENDPOINTS,
    /** The operator's own namespace (POD_NAMESPACE): where model key Secrets and grant keys are read. */
    operatorNamespace,
    /** The agent runtime image (AGENT_IMAGE). */
    agentImage: env.AGENT_IMAGE,
    /** How often a failed agent pod is replaced before the session fails (AGENT_POD_RETRIES). */
    agentPodRetries: env.AGENT_POD_RETRIES,
    /** The agent container's resource requests and limits (AGENT_RESOURCES). */
    agentResources: env.AGENT_RESOURCES,
    /** The port providers serve on (PROVIDER_PORT). */
    providerPort: env.PROVIDER_PORT,
    /** Where the health server listens: /healthz, /readyz, /metrics (HEALTH_HOST). */
    healthHost: env.HEALTH_HOST,
    /** The health server's port (HEALTH_PORT). */
    healthPort: env.HEALTH_PORT,
    /**
     * Lease gatehouse-controller (LEADER_ELECTION, LEADER_ELECTION_NAMESPACE): whether the controllers
     * run only while holding it, its namespace, and this replica's identity before its random suffix
     * (POD_NAME, else the host name).
     */
    leaderElection: {
      enabled: env.LEADER_ELECTION === "true",
      namespace: env.LEADER_ELECTION_NAMESPACE ?? env.POD_NAMESPACE ?? OPERATOR_NAMESPACE,
      identityPrefix: env.POD_NAME ?? hostname(),
    },
    /**
     * The served namespaces (WATCH_NAMESPACES): where both components watch pods and EndpointSlices and
     * the controller runs AgentSessions and ProviderInstances; empty = every namespace.
     */
    watchNamespaces: env.WATCH_NAMESPACES,
    /** The gateway's user name as the API server authenticates it (GATEWAY_SERVICE_ACCOUNT in POD_NAMESPACE). */
    gatewayUsername: `system:serviceaccount:${operatorNamespace}:${env.GATEWAY_SERVICE_ACCOUNT}`,
    /** The pino level (LOG_LEVEL). */
    logLevel: env.LOG_LEVEL,
    /** Provider grants and their signing keys (GRANT_*; providers/grant-keys.ts); durations in seconds. */
    grants: {
      ttlSeconds: env.GRANT_TTL_SECONDS,
      keyRotationSeconds: env.GRANT_KEY_ROTATION_SECONDS,
      keyActivationSeconds: env.GRANT_KEY_ACTIVATION_SECONDS,
      keysResyncSeconds: env.GRANT_KEYS_RESYNC_SECONDS,
    },
    /** The ceilings on every session's limits (SESSION_CEILINGS over core/limits.ts's defaults). */
    sessionCeilings: env.SESSION_CEILINGS,
    /** What one agent session may ask of the gateway (GATEWAY_LIMITS over DEFAULT_GATEWAY_LIMITS). */
    gatewayLimits: env.GATEWAY_LIMITS,
    /** The gateway's Postgres pool size per replica (GATEWAY_POSTGRES_POOL_SIZE); the controller's stays 10. */
    gatewayPostgresPoolSize: env.GATEWAY_POSTGRES_POOL_SIZE,
    /**
     * Core's settings beyond its defaults (core/ports.ts CoreConfig): the provider call deadline and the
     * execution lease grace in milliseconds (PROVIDER_DEADLINE_MS, EXECUTION_LEASE_GRACE_MS), the default
     * Approval lifetime (APPROVAL_TTL_SECONDS), the grace for an Approval's request record
     * (APPROVAL_REQUEST_GRACE_MS) and the approval floor (APPROVAL_FLOOR; absent when it sets none).
     */
    execution: {
      providerDeadlineMs: env.PROVIDER_DEADLINE_MS,
      leaseGraceMs: env.EXECUTION_LEASE_GRACE_MS,
      approvalTtlSeconds: env.APPROVAL_TTL_SECONDS,
      requestRecordGraceMs: env.APPROVAL_REQUEST_GRACE_MS,
      ...(Object.keys(env.APPROVAL_FLOOR).length > 0 ? { approvalFloor: env.APPROVAL_FLOOR } : {}),
    },
    /** Test-only failpoints (GATEHOUSE_FAILPOINTS; core/failpoints.ts) and what each does; empty in production. */
    failpoints,
    /** Audit checkpoints: period in milliseconds (AUDIT_CHECKPOINT_INTERVAL_SECONDS; what the witness keeps is by age, core/witness-retention.ts; DESIGN §6). */
    auditCheckpoints: {
      intervalMs: Math.round(env.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000),
    },
  };
});

/** The parsed configuration: the output of {@link operatorConfigSchema}. */
export type OperatorConfig = z.output<typeof operatorConfigSchema>;

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
  const result = operatorConfigSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      environmentProblems(result.error, Environment, env, setInOperatorEnvironment).join("\n"),
      {
        cause: result.error,
      },
    );
  }
  if (result.data.failpoints.size > 0 && env.NODE_ENV === "production") {
    // The operator image sets NODE_ENV=production: a failpoint there is a mistake, never a test.
    throw new ConfigError(
      "GATEHOUSE_FAILPOINTS: test-only failpoints are refused in the production image (NODE_ENV=production); unset it",
    );
  }
  return result.data;
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
