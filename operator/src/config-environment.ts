/**
 * The environment variables the operator reads (config.ts parses them): one zod schema, each
 * variable's meaning its `.describe()` text in `Environment` below, with the shapes of the JSON ones.
 */
import { z } from "zod";
import { parseFailpoints } from "./core/failpoints.ts";
import { defaultCoreConfig } from "./core/ports.ts";

/**
 * One model endpoint of MODEL_ENDPOINTS: an OpenAI-compatible `baseURL` (ending before
 * `/chat/completions`, e.g. `https://api.openai.com/v1`), the Secret holding its key in the operator's
 * namespace (`data[key]`; absent = the endpoint takes no key), the models sessions may ask for (empty =
 * any), and whether it serves sessions without `spec.model.endpointRef`.
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
  })
  .strict();
export type ModelEndpoint = z.infer<typeof ModelEndpoint>;

/** Resource quantities of the agent container (corev1.ResourceRequirements, quantities as strings). */
const Quantities = z.partialRecord(z.enum(["cpu", "memory", "ephemeral-storage"]), z.string().min(1));
export const AgentResources = z
  .object({ requests: Quantities.optional(), limits: Quantities.optional() })
  .strict();
export type AgentResources = z.infer<typeof AgentResources>;
const DEFAULT_AGENT_RESOURCES: AgentResources = {
  requests: { cpu: "50m", memory: "128Mi" },
  limits: { cpu: "1", memory: "512Mi" },
};

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
    z.array(
      z.strictObject({
        cidr: z.union([z.cidrv4(), z.cidrv6()]),
        port: z.number().int().min(1).max(65535),
      }),
    ),
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
    "both (the gateway proxies, the controller checks sessions' models): JSON list of {name, baseURL, keySecretRef?: {name, key}, models?, default?}: where the gateway's model proxy sends a session's requests; the key is read from that Secret in the operator's namespace (no keySecretRef: no key)",
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
    "controller: JSON corev1 ResourceRequirements of the agent container (default requests 50m/128Mi, limits 1/512Mi)",
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
    .describe("namespace of Lease gatehouse-controller (default POD_NAMESPACE, else gatehouse-system)"),
  POD_NAMESPACE: z
    .string()
    .optional()
    .describe(
      "the components' namespace: model key Secrets, grant keys, published grant public keys (default gatehouse-system)",
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
    z
      .object({
        maxTurns: z.number().int().min(1),
        maxToolCalls: z.number().int().min(0),
        maxWrites: z.number().int().min(0),
        tokenBudget: z.number().int().min(0),
        timeoutSeconds: z.number().int().min(1),
        holdPodForSeconds: z.number().int().min(0),
      })
      .partial()
      .strict(),
    "an object of session ceilings",
  ).describe(
    "JSON: the operator's ceilings on session limits {maxTurns, maxToolCalls, maxWrites, tokenBudget, timeoutSeconds, holdPodForSeconds}; unset fields keep their defaults (core/limits.ts)",
  ),
  APPROVAL_FLOOR: jsonVariable(
    "APPROVAL_FLOOR",
    "{}",
    z.partialRecord(z.enum(["read", "draft", "write"]), z.enum(["Auto", "Required", "Forbidden"])),
    "an object of approval modes by effect",
  ).describe(
    'JSON: the least approval per effect whatever a Capability says, e.g. {"write":"Required"} (default none)',
  ),
  GATEWAY_LIMITS: jsonVariable(
    "GATEWAY_LIMITS",
    "{}",
    z
      .object({
        requestsPerSecond: z.number().int().min(1).max(10_000),
        burst: z.number().int().min(1).max(100_000),
        maxInFlight: z.number().int().min(1).max(10_000),
        modelRequestBytes: z
          .number()
          .int()
          .min(65_536)
          .max(64 * 1024 * 1024),
        eventsPerSession: z.number().int().min(10),
        eventBytesPerSession: z.number().int().min(65_536),
      })
      .partial()
      .strict(),
    "an object of gateway limits",
  ).describe(
    "gateway: JSON, what one agent session may ask (docs/security.md): {requestsPerSecond: 20, burst: 40, maxInFlight: 32} per replica (over them: 429 with Retry-After), modelRequestBytes 8388608 (the model proxy's body limit), eventsPerSession 5000 and eventBytesPerSession 16777216 (what the agent may write to its transcript); unset fields keep these defaults",
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
