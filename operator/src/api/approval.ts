/** Approval (`apr`): a human decision on one proposed call, created only by the operator (DESIGN §2). */
import { z } from "zod";
import { Conditions, ProviderRef, Subject, UsersAndGroups } from "./common.ts";
import { APPROVAL_PHASES, APPROVAL_VOCABULARY, RESOLUTION_OUTCOMES } from "./status/approval.ts";
import { conditionsDescription, phaseDescription } from "./status/words.ts";

/**
 * The shape admission can check of RFC 8785 canonical JSON of an object: `{…}` without raw control
 * characters (canonical JSON escapes them in strings and has no insignificant whitespace). CEL cannot
 * parse JSON; Core re-canonicalizes and compares with the digest before executing.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to exclude raw control characters.
export const CANONICAL_JSON_OBJECT = /^[{][^\x00-\x1f]*[}]$/;

/**
 * Most characters `spec.arguments` holds (the CRD's `maxLength`). Core refuses a call that needs
 * approval with longer canonical arguments as `invalid_arguments`, before any Approval is created.
 */
export const MAX_APPROVAL_ARGUMENTS_LENGTH = 65_536;

export const Decision = z.object({
  approver: z.string().min(1).max(253).describe("Must equal the user appending the decision."),
  verdict: z.enum(["Approve", "Reject"]),
  reason: z.string().max(1024).optional(),
});
export type Decision = z.infer<typeof Decision>;

export const Resolution = z.object({
  resolver: z.string().min(1).max(253).describe("Must equal the user appending the resolution."),
  outcome: z
    .enum(RESOLUTION_OUTCOMES)
    .describe("What the person found in the business system: the call took effect, or it did not."),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .describe("What the person checked, for the audit record and the agent."),
});
export type Resolution = z.infer<typeof Resolution>;

export const ApprovalSpec = z
  .object({
    executionId: z
      .string()
      .max(64)
      .describe(
        "The execution identity: sha256 of session uid, turn, position, capability and arguments digest.",
      ),
    sessionRef: z
      .object({ name: z.string().max(253), uid: z.string().max(64) })
      .describe("The AgentSession that proposed the call."),
    capability: z.string().max(253).describe("Name of the Capability object."),
    capabilityId: z.string().max(64).describe("The capability id, e.g. aps.schedule.publish."),
    providerRef: ProviderRef,
    arguments: z
      .string()
      .max(MAX_APPROVAL_ARGUMENTS_LENGTH)
      .regex(CANONICAL_JSON_OBJECT)
      .describe(
        "The call's arguments as RFC 8785 canonical JSON of an object (a string, so equality is exact).",
      ),
    argumentsDigest: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe("sha256 of arguments, 64 lowercase hex digits."),
    schemaDigest: z.string().max(128).describe("The capability's schema digest when the call was proposed."),
    target: z
      .object({ kind: z.string().max(63), id: z.string().max(253), version: z.string().max(63).optional() })
      .optional()
      .describe("The business object the call changes, when known."),
    idempotencyKey: z
      .string()
      .max(128)
      .optional()
      .describe(
        "The provider idempotency key the call runs under: one per action (session, capability, arguments) for a write, so identical proposals run at most once (absent: derived from executionId).",
      ),
    requester: Subject.describe("The session's subject."),
    approvers: UsersAndGroups,
    requiredApprovals: z.number().int().min(1).max(10),
    allowSelfApproval: z.boolean(),
    expiresAt: z.string().describe("RFC 3339; the operator moves a Pending Approval to Expired after it."),
    decisions: z
      .array(Decision)
      .max(32)
      .default([])
      .describe('Append one entry with a JSON patch {"op":"add","path":"/spec/decisions/-","value":{...}}.'),
    resolutions: z
      .array(Resolution)
      .max(8)
      .default([])
      .describe(
        'A person\'s settlement of an Unknown execution outcome (kubectl gatehouse resolve): one entry, appended with a JSON patch {"op":"add","path":"/spec/resolutions/-","value":{...}} while status.phase is Unknown, by a holder of the RBAC verb resolve on approvals.',
      ),
    autoExecution: z
      .boolean()
      .optional()
      .describe(
        "True on an Approval the operator created to record a call that ran without approval (Auto) and whose outcome is unknown: it takes no decisions, only a resolution.",
      ),
  })
  .describe(
    "The exact call proposed and who may decide it. Immutable except decisions, which approvers append to, and resolutions.",
  );
export type ApprovalSpec = z.infer<typeof ApprovalSpec>;

export const ApprovalStatus = z.object({
  phase: z.enum(APPROVAL_PHASES).optional().describe(phaseDescription(APPROVAL_VOCABULARY)),
  observedGeneration: z.number().int().min(0).optional(),
  conditions: Conditions.optional().describe(conditionsDescription(APPROVAL_VOCABULARY)),
  approvals: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Counted Approve decisions from eligible approvers."),
  ignoredDecisions: z
    .array(z.object({ approver: z.string().max(253), reason: z.string().max(1024) }))
    .max(32)
    .optional()
    .describe("Decisions that did not count, and why."),
  observedDecisions: z
    .number()
    .int()
    .min(0)
    .max(32)
    .optional()
    .describe(
      "How many entries of spec.decisions the operator has taken into account: evaluated while Pending, or reported as ignored (Event DecisionIgnored and an audit record) once the Approval was decided.",
    ),
  execution: z
    .object({
      id: z.string().max(128),
      state: z.enum(["started", "succeeded", "failed", "unknown"]),
      errorKind: z.string().max(63).optional(),
      resultSummary: z.string().max(4096).optional(),
      startedAt: z.string().optional(),
      finishedAt: z.string().optional(),
    })
    .optional(),
});
export type ApprovalStatus = z.infer<typeof ApprovalStatus>;
