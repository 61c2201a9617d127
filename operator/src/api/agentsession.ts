/** AgentSession (`ags`): one agent run on behalf of a subject (DESIGN §2). */
import { z } from "zod";
import { Conditions, Dns1123Label, Dns1123Subdomain, Subject } from "./common.ts";
import { AGENT_SESSION_VOCABULARY, SESSION_PHASES } from "./status/agentsession.ts";
import { conditionsDescription, phaseDescription } from "./status/words.ts";

/**
 * The engines the agent image carries (agent-image/src/engines/select.ts). Which of them a session may
 * use is the installation's choice, made by admission (admission-engine.ts).
 */
export const ENGINES = ["builtin", "pi", "codex"] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * The engine of a session whose agent is an image of its own (spec.agent.image) instead of Gatehouse's
 * agent image: it speaks MCP to the gateway (docs/mcp.md). Admission allows only the images of the
 * chart value engines.externalImages (admission-engine.ts).
 */
export const EXTERNAL_ENGINE = "external";
/** Every value of spec.engine: the agent image's engines and `external`. */
export const SESSION_ENGINES = [...ENGINES, EXTERNAL_ENGINE] as const;
export type SessionEngine = (typeof SESSION_ENGINES)[number];

export const AgentSessionSpec = z
  .object({
    subject: Subject.describe(
      "Who the agent acts for. On create, user must equal the requesting user and groups must be a subset of the requester's groups.",
    ),
    engine: z
      .enum(SESSION_ENGINES)
      .default("builtin")
      .describe(
        "Agent engine: builtin is Gatehouse's own loop on the OpenAI SDK; pi runs Pi in the agent pod; codex runs the Codex app server in the agent pod; external runs the image spec.agent.image names, an MCP client of the gateway. Admission allows only the engines of the chart value engines.allowed (default builtin) and, for external, only the images of engines.externalImages (default none). Immutable.",
      ),
    agent: z
      .object({
        image: z
          .string()
          .min(1)
          .max(512)
          .regex(/^\S+$/)
          .describe(
            "The agent's container image, exactly as one entry of the chart value engines.externalImages spells it (a digest, repo@sha256:..., pins what runs). Its own entrypoint runs in the hardened agent pod.",
          ),
      })
      .optional()
      .describe(
        "The agent of a session with spec.engine external: required with external, forbidden with any other engine. Immutable.",
      ),
    model: z
      .object({
        name: z.string().min(1).max(256).describe("Model name sent to the endpoint."),
        endpointRef: Dns1123Label.optional().describe(
          "Name of a model endpoint from the operator's configuration; empty means the default endpoint. Users never supply URLs.",
        ),
      })
      .describe("The model the agent uses."),
    instructions: z.string().max(16384).default("").describe("System instructions for the agent."),
    messages: z
      .array(z.object({ text: z.string().min(1).max(16384).describe("Message text.") }))
      .min(1)
      .max(64)
      .describe("Append-only user messages; the first is the task. Appending starts a new turn."),
    capabilities: z
      .array(Dns1123Subdomain)
      .max(64)
      .optional()
      .describe(
        "Names of Capability objects the agent may see; default all in the namespace that the subject may use.",
      ),
    limits: z
      .object({
        maxTurns: z.number().int().min(1).max(1000).optional().describe("Most model turns."),
        maxToolCalls: z
          .number()
          .int()
          .min(0)
          .max(10000)
          .optional()
          .describe("Most tool calls in the session."),
        maxWrites: z.number().int().min(0).max(1000).optional().describe("Most write-effect executions."),
        tokenBudget: z.number().int().min(0).optional().describe("Most tokens (input + output)."),
        timeoutSeconds: z
          .number()
          .int()
          .min(1)
          .max(604800)
          .optional()
          .describe("Wall-clock budget of the session in seconds."),
      })
      .optional()
      .describe("Limits; each effective value is the minimum of this and the operator's ceiling."),
    approval: z
      .object({
        holdPodForSeconds: z
          .number()
          .int()
          .min(0)
          .max(3600)
          .optional()
          .describe("How long the agent pod waits for a decision before it is released."),
      })
      .optional()
      .describe("How the session waits for approvals."),
    cancel: z.boolean().optional().describe("Set true to cancel the session; it cannot be undone."),
  })
  .describe(
    "What the agent is asked to do and for whom. Only the subject may change it afterwards: append to messages, or set cancel.",
  );
export type AgentSessionSpec = z.infer<typeof AgentSessionSpec>;

export const AgentSessionStatus = z.object({
  phase: z.enum(SESSION_PHASES).optional().describe(phaseDescription(AGENT_SESSION_VOCABULARY)),
  observedGeneration: z.number().int().min(0).optional(),
  conditions: Conditions.optional().describe(conditionsDescription(AGENT_SESSION_VOCABULARY)),
  podName: z.string().max(253).optional().describe("The current agent pod."),
  attempt: z
    .number()
    .int()
    .min(1)
    .max(16)
    .optional()
    .describe("Which agent pod run this is: 1 for the first; a crashed pod is retried with the next."),
  resumes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "How often the session was resumed by a new pod after its pod was released while awaiting approval.",
    ),
  continuations: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "How often a new agent pod was started to answer messages appended after the agent's final answer.",
    ),
  runStartTime: z
    .string()
    .optional()
    .describe(
      "When the current run began: the session's start, or the continuation that answers appended messages. spec.limits.timeoutSeconds counts from here.",
    ),
  podFailures: z
    .array(
      z.object({
        podName: z.string().max(253),
        reason: z.string().max(128),
        exitCode: z.number().int().optional(),
        finishedAt: z.string().optional(),
      }),
    )
    .max(16)
    .optional()
    .describe("The agent pods that failed and were retried (bounded by the retry limit)."),
  podUID: z
    .string()
    .max(64)
    .optional()
    .describe("UID of the current agent pod; the gateway binds the pod's token to it."),
  turns: z.number().int().min(0).optional(),
  toolCalls: z.number().int().min(0).optional(),
  writes: z.number().int().min(0).optional(),
  compactions: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "How often the agent compacted the context its model sees to fit the model's window; the transcript marks each (events of kind compaction) and keeps every turn.",
    ),
  usage: z
    .object({ inputTokens: z.number().int().min(0), outputTokens: z.number().int().min(0) })
    .optional()
    .describe("Tokens used so far."),
  effectiveLimits: z
    .object({
      maxTurns: z.number().int().min(0).describe("Most model turns."),
      maxToolCalls: z.number().int().min(0).describe("Most tool calls in the session."),
      maxWrites: z.number().int().min(0).describe("Most write-effect executions."),
      tokenBudget: z.number().int().min(0).describe("Most tokens (input + output)."),
      timeoutSeconds: z.number().int().min(0).describe("Wall-clock budget of each run in seconds."),
      holdPodForSeconds: z
        .number()
        .int()
        .min(0)
        .describe("How long the agent pod waits for a decision before it is released."),
    })
    .optional()
    .describe(
      "Every limit as the session runs under it: the value spec.limits or spec.approval asks for, or the operator's ceiling (chart value sessionCeilings) when spec asks for more or leaves it unset. A ceiling that lowers a value asked for is also reported once as a Warning Event LimitLowered.",
    ),
  pendingApprovals: z
    .array(z.string().max(253))
    .max(64)
    .optional()
    .describe("Names of Approvals waiting for a decision."),
  result: z
    .string()
    .max(16384)
    .optional()
    .describe("The agent's final answer (bounded; the transcript lives in Postgres)."),
  startTime: z.string().optional(),
  completionTime: z.string().optional(),
});
export type AgentSessionStatus = z.infer<typeof AgentSessionStatus>;
