/**
 * The environment variables the operator reads: one zod schema, each variable's meaning its
 * `.describe()` text in `Environment` below, with the shapes of the JSON ones and their defaults.
 * config.ts transforms what it parses into the configuration the programs use.
 */
import { z } from "zod";
import { DEFAULT_CONTEXT_WINDOW } from "./api/agent-protocol.ts";
import { APPROVAL_MODES } from "./api/status/capability.ts";
import { OPERATOR_NAMESPACE } from "./api/well-known.ts";
import { parseFailpoints } from "./core/failpoints.ts";
import { defaultSessionCeilings, type SessionCeilings } from "./core/limits.ts";
import { defaultCoreConfig } from "./core/ports.ts";

/**
 * One model endpoint of MODEL_ENDPOINTS: an OpenAI-compatible `baseURL` (ending before
 * `/chat/completions`, e.g. `https://api.openai.com/v1`), the Secret holding its key in the operator's
 * namespace (`data[key]`; absent = the endpoint takes no key), the models sessions may ask for (empty =
 * any), whether it serves sessions without `spec.model.endpointRef`, and the models' context window in
 * tokens (absent: `DEFAULT_CONTEXT_WINDOW`), which the agent compacts its conversation to fit.
 */
export const ModelEndpoint = z
  .object({
    name: z.string().min(1),
    baseURL: z.url(),
    keySecretRef: z
      .object({ name: z.string().min(1), key: z.string().min(1) })
      .strict()
      .optional(),
    models: z.array(z.string()).default([]),
    default: z.boolean().default(false),
    contextWindow: z.number().int().min(1024).optional(),
  })
  .strict();
export type ModelEndpoint = z.infer<typeof ModelEndpoint>;

/** Resource quantities of the agent container (corev1.ResourceRequirements, quantities as strings). */
const Quantities = z.partialRecord(z.enum(["cpu", "memory", "ephemeral-storage"]), z.string().min(1));
export const AgentResources = z
  .object({ requests: Quantities.optional(), limits: Quantities.optional() })
  .strict();
export type AgentResources = z.infer<typeof AgentResources>;
const DEFAULT_AGENT_RESOURCES = {
  requests: { cpu: "50m", memory: "128Mi" },
  limits: { cpu: "1", memory: "512Mi" },
} satisfies AgentResources;

/** A gateway outside the cluster (OFF_CLUSTER_GATEWAYS): the address block agent pods reach it at, and its TCP port. */
export const OffClusterGateway = z.strictObject({
  cidr: z.union([z.cidrv4(), z.cidrv6()]),
  port: z.number().int().min(1).max(65535),
});
export type OffClusterGateway = z.infer<typeof OffClusterGateway>;

/** SESSION_CEILINGS: each field its ceiling, an unset one the default of core/limits.ts. */
const SessionCeilingsSchema = z
  .object({
    maxTurns: z.number().int().min(1).default(defaultSessionCeilings.maxTurns),
    maxToolCalls: z.number().int().min(0).default(defaultSessionCeilings.maxToolCalls),
    maxWrites: z.number().int().min(0).default(defaultSessionCeilings.maxWrites),
    tokenBudget: z.number().int().min(0).default(defaultSessionCeilings.tokenBudget),
    timeoutSeconds: z.number().int().min(1).default(defaultSessionCeilings.timeoutSeconds),
    holdPodForSeconds: z.number().int().min(0).default(defaultSessionCeilings.holdPodForSeconds),
  })
  .strict() satisfies z.ZodType<SessionCeilings>;

/**
 * GATEWAY_LIMITS, what one agent session may ask of the gateway: its request rate and in-flight cap per
 * replica (gateway/session-limits.ts), the model proxy's body limit, and what its agent may write to its
 * transcript over the whole session — the events it posts (`POST /v1/session/events`) and the tool calls
 * it makes (`POST /v1/invoke`), refused ones included, counted and as stored JSON bytes
 * (gateway/server.ts). The defaults: far above what an agent does, far below what a flood needs.
 */
export const GatewayLimits = z
  .object({
    requestsPerSecond: z.number().int().min(1).max(10_000).default(20),
    burst: z.number().int().min(1).max(100_000).default(40),
    maxInFlight: z.number().int().min(1).max(10_000).default(32),
    modelRequestBytes: z
      .number()
      .int()
      .min(65_536)
      .max(64 * 1024 * 1024)
      .default(8 * 1024 * 1024),
    eventsPerSession: z.number().int().min(10).default(5_000),
    eventBytesPerSession: z
      .number()
      .int()
      .min(65_536)
      .default(16 * 1024 * 1024),
  })
  .strict();
export type GatewayLimits = z.infer<typeof GatewayLimits>;
export const DEFAULT_GATEWAY_LIMITS: GatewayLimits = GatewayLimits.parse({});

/**
 * The gateway's Postgres connections per replica (GATEWAY_POSTGRES_POOL_SIZE). 10: on the project's
 * 2-core machine (test/bench/pool-size.ts), 20 or 40 were slower than 10 at 16 invokes in flight and at
 * most 18% faster at 64 (the wait for a connection moves into Postgres and the cores); 5 was slower at
 * both. A database with cores of its own is what a larger pool is for (docs/operations.md).
 */
export const DEFAULT_GATEWAY_POSTGRES_POOL_SIZE = 10;

/**
 * An environment variable holding JSON (`fallback` when unset), parsed and then checked with `schema`;
 * a variable that is not JSON, or not of that shape, is an issue naming it and `expected`.
 */
function jsonVariable<T extends z.ZodType>(name: string, fallback: string, schema: T, expected: string) {
  return z
    .string()
    .default(fallback)
    .transform((text, ctx): z.infer<T> => {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: `${name} is not JSON (${expected}): ${String(error)}` });
        return z.NEVER;
      }
      const parsed = schema.safeParse(value);
      if (!parsed.success) {
        ctx.addIssue({
          code: "custom",
          message: `${name} is not ${expected}: ${z.prettifyError(parsed.error)}`,
        });
        return z.NEVER;
      }
      return parsed.data;
    });
}

export const Environment = z.object({
  KUBECONFIG: z.string().optional().describe("kubeconfig file; unset = the in-cluster ServiceAccount"),
  KUBE_CONTEXT: z.string().optional().describe("context of KUBECONFIG (default its current context)"),
  LOCAL_NODE_ROOT: z
    .string()
    .min(1)
    .optional()
    .describe(
      "set by the test cluster's local node: prefix of mounted paths, e.g. the in-cluster ServiceAccount token (unset elsewhere)",
    ),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/[^/]/, "not a postgres:// URL")
    .describe(
      "Postgres URL of this program's runtime login, a member of its component's role only — gatehouse_gateway or gatehouse_controller (never the owner, a superuser or the other component's login: the program refuses them; the migrate program creates it, docs/upgrading.md); chart value database.runtime.<component>.secretName (required)",
    ),
  GATEWAY_HOST: z.string().default("0.0.0.0").describe("gateway: where it listens (default 0.0.0.0)"),
  GATEWAY_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .default(8443)
    .describe("gateway: its port (default 8443)"),
  TRANSCRIPTS_API_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .default(10443)
    .describe(
      "gateway: the HTTPS port of the transcripts API (APIService v1alpha1.transcripts.gatehouse.dev), on GATEWAY_HOST (default 10443)",
    ),
  TRANSCRIPTS_API_TLS_CERT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "gateway (required): PEM serving certificate of the transcripts API, for the name <service>.<namespace>.svc of the APIService's Service; re-read every minute",
    ),
  TRANSCRIPTS_API_TLS_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("gateway (required): PEM private key of TRANSCRIPTS_API_TLS_CERT_FILE"),
  GATEWAY_URL: z
    .url()
    .optional()
    .describe("controller: the gateway URL agent pods are given (default http://GATEWAY_HOST:GATEWAY_PORT)"),
  OFF_CLUSTER_GATEWAYS: jsonVariable(
    "OFF_CLUSTER_GATEWAYS",
    "[]",
    z.array(OffClusterGateway),
    "a JSON list of {cidr, port}",
  ).describe(
    'controller: where agent pods reach a gateway that runs outside the cluster, as JSON [{"cidr":"10.0.0.5/32","port":8443}]: no pod selector can name it, so the agent NetworkPolicy also allows egress to each cidr on its TCP port (default none); chart value networkPolicy.offClusterGateways',
  ),
  MODEL_ENDPOINTS: jsonVariable(
    "MODEL_ENDPOINTS",
    "[]",
    z.array(ModelEndpoint),
    "a JSON list of endpoints",
  ).describe(
    `both (the gateway proxies, the controller checks sessions' models): JSON list of {name, baseURL, keySecretRef?: {name, key}, models?, default?, contextWindow?}: where the gateway's model proxy sends a session's requests; the key is read from that Secret in the operator's namespace (no keySecretRef: no key); contextWindow is the models' window in tokens, which agents compact their conversation to fit (default ${DEFAULT_CONTEXT_WINDOW})`,
  ),
  AGENT_IMAGE: z
    .string()
    .default("gatehouse/agent:dev")
    .describe("controller: the agent runtime image (default gatehouse/agent:dev)"),
  AGENT_POD_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(2)
    .describe("controller: how often a failed agent pod is replaced before the session fails (default 2)"),
  AGENT_RESOURCES: jsonVariable(
    "AGENT_RESOURCES",
    JSON.stringify(DEFAULT_AGENT_RESOURCES),
    AgentResources,
    '{"requests": {...}, "limits": {...}} of quantity strings',
  ).describe(
    `controller: JSON corev1 ResourceRequirements of the agent container (default requests ${DEFAULT_AGENT_RESOURCES.requests.cpu}/${DEFAULT_AGENT_RESOURCES.requests.memory}, limits ${DEFAULT_AGENT_RESOURCES.limits.cpu}/${DEFAULT_AGENT_RESOURCES.limits.memory})`,
  ),
  PROVIDER_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .default(8080)
    .describe("port providers serve on (default 8080)"),
  HEALTH_HOST: z
    .string()
    .default("0.0.0.0")
    .describe("where the health server listens: /healthz, /readyz, /metrics (default 0.0.0.0)"),
  HEALTH_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(8081)
    .describe("health server port (default 8081)"),
  LEADER_ELECTION: z
    .enum(["true", "false"], { error: "LEADER_ELECTION must be true or false" })
    .default("true")
    .describe(
      "controller: true (default) or false: run the controllers only while holding Lease gatehouse-controller",
    ),
  LEADER_ELECTION_NAMESPACE: z
    .string()
    .optional()
    .describe(`namespace of Lease gatehouse-controller (default POD_NAMESPACE, else ${OPERATOR_NAMESPACE})`),
  POD_NAMESPACE: z
    .string()
    .optional()
    .describe(
      `the components' namespace: model key Secrets, grant keys, published grant public keys (default ${OPERATOR_NAMESPACE})`,
    ),
  WATCH_NAMESPACES: z
    .string()
    .default("")
    .transform((value) =>
      value
        .split(",")
        .map((namespace) => namespace.trim())
        .filter((namespace) => namespace !== ""),
    )
    .pipe(z.array(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "not a namespace name")))
    .describe(
      "both: comma list of the served namespaces, the only ones whose pods and EndpointSlices they watch (their pod RBAC is bound there) and where the controller runs AgentSessions and ProviderInstances; a session elsewhere stays Pending with condition Progressing=False, a provider Ready=False, reason NamespaceNotServed (default empty: every namespace)",
    ),
  GATEWAY_SERVICE_ACCOUNT: z
    .string()
    .default("gatehouse-gateway")
    .describe(
      "controller: the gateway's ServiceAccount in POD_NAMESPACE, the only user besides the controller that admission lets create Approvals (default gatehouse-gateway)",
    ),
  POD_NAME: z
    .string()
    .optional()
    .describe("this replica's name, the start of its leader-election identity (default the host name)"),
  LOG_LEVEL: z
    .enum(["trace", "debug", "info", "warn", "error"])
    .default("info")
    .describe("pino level (default info)"),
  GRANT_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(60)
    .default(60)
    .describe("lifetime of a provider grant, exp - iat (default and maximum 60; DESIGN §5)"),
  GRANT_KEY_ROTATION_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(86_400)
    .describe("a new grant signing key when the newest is this old (default 86400)"),
  GRANT_KEY_ACTIVATION_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(120)
    .describe("a new key signs once it is this old, so every replica and provider knows it (default 120)"),
  GRANT_KEYS_RESYNC_SECONDS: z.coerce
    .number()
    .min(0.1)
    .max(3600)
    .default(30)
    .describe(
      "how often every replica re-reads its grant key Secret and the published grant public keys (default 30)",
    ),
  SESSION_CEILINGS: jsonVariable(
    "SESSION_CEILINGS",
    "{}",
    SessionCeilingsSchema,
    "an object of session ceilings",
  ).describe(
    "JSON: the operator's ceilings on session limits {maxTurns, maxToolCalls, maxWrites, tokenBudget, timeoutSeconds, holdPodForSeconds}; unset fields keep their defaults (core/limits.ts)",
  ),
  APPROVAL_FLOOR: jsonVariable(
    "APPROVAL_FLOOR",
    "{}",
    z.partialRecord(z.enum(["read", "draft", "write"]), z.enum(APPROVAL_MODES)),
    "an object of approval modes by effect",
  ).describe(
    'JSON: the least approval per effect whatever a Capability says, e.g. {"write":"Required"} (default none)',
  ),
  GATEWAY_LIMITS: jsonVariable("GATEWAY_LIMITS", "{}", GatewayLimits, "an object of gateway limits").describe(
    `gateway: JSON, what one agent session may ask (docs/security.md): {requestsPerSecond: ${DEFAULT_GATEWAY_LIMITS.requestsPerSecond}, burst: ${DEFAULT_GATEWAY_LIMITS.burst}, maxInFlight: ${DEFAULT_GATEWAY_LIMITS.maxInFlight}} per replica (over them: 429 with Retry-After), modelRequestBytes ${DEFAULT_GATEWAY_LIMITS.modelRequestBytes} (the model proxy's body limit), eventsPerSession ${DEFAULT_GATEWAY_LIMITS.eventsPerSession} and eventBytesPerSession ${DEFAULT_GATEWAY_LIMITS.eventBytesPerSession} (what the agent may write to its transcript); unset fields keep these defaults`,
  ),
  GATEWAY_POSTGRES_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(2)
    .max(500)
    .default(DEFAULT_GATEWAY_POSTGRES_POOL_SIZE)
    .describe(
      `gateway: Postgres connections per replica, 2 to 500 (the database's readiness probe shares them): every statement of the invoke path, of agents' events and of transcript reads waits for one; the server's max_connections must cover replicas × this beside the controller's 10 per replica and the migrate Job; chart value gateway.database.poolSize (default ${DEFAULT_GATEWAY_POSTGRES_POOL_SIZE})`,
    ),
  PROVIDER_DEADLINE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(defaultCoreConfig.providerDeadlineMs)
    .describe(
      `deadline of one provider call in milliseconds (default ${defaultCoreConfig.providerDeadlineMs})`,
    ),
  EXECUTION_LEASE_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3_600_000)
    .default(defaultCoreConfig.leaseGraceMs)
    .describe(
      `lease time beyond the provider deadlines before a claimed execution is recovered, in milliseconds (default ${defaultCoreConfig.leaseGraceMs})`,
    ),
  APPROVAL_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(604_800)
    .default(defaultCoreConfig.approvalTtlSeconds)
    .describe(
      `how long an Approval stays open when its Capability sets no policy.ttlSeconds, in seconds (default ${defaultCoreConfig.approvalTtlSeconds})`,
    ),
  APPROVAL_REQUEST_GRACE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(3_600_000)
    .default(defaultCoreConfig.requestRecordGraceMs)
    .describe(
      `how long an approved Approval whose request is not yet in the audit chain waits for it before it is refused, in milliseconds (default ${defaultCoreConfig.requestRecordGraceMs})`,
    ),
  GATEHOUSE_FAILPOINTS: z
    .string()
    .default("")
    .transform((value, ctx) => {
      try {
        return parseFailpoints(value);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    })
    .describe(
      "test only: comma list of point=exit|block (points: core/failpoints.ts); the process SIGKILLs itself or blocks there once",
    ),
  AUDIT_CHECKPOINT_INTERVAL_SECONDS: z.coerce
    .number()
    .min(0.1)
    .max(86_400)
    .default(60)
    .describe("controller: period of audit checkpoints (default 60)"),
});
