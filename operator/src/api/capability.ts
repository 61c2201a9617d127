/** Capability (`cap`): a grant exposing one provider capability in this namespace, under policy (DESIGN §2). */
import { CapabilityId, Effect, Idempotency, Mode, TargetOffer } from "@gatehouse/provider-sdk";
import { z } from "zod";
import { Conditions, FreeformObject, ProviderRef, UsersAndGroups } from "./common.ts";
import { APPROVAL_MODES, CAPABILITY_VOCABULARY } from "./status/capability.ts";
import { conditionsDescription } from "./status/words.ts";

export const CapabilitySpec = z
  .object({
    providerRef: ProviderRef.describe("The ProviderInstance that offers this capability."),
    id: CapabilityId.describe(
      "Capability id as the provider's manifest names it, e.g. aps.schedule.publish: dotted lowercase segments, at most 64 characters. The model sees it with '.' replaced by '_'.",
    ),
    policy: z
      .object({
        approval: z
          .enum(APPROVAL_MODES)
          .optional()
          .describe(
            "Auto, Required or Forbidden. Default by effect: read and draft Auto, write Required. An explicit value replaces the default; the operator's floor (APPROVAL_FLOOR, e.g. every write Required) still applies, and the stricter of the two wins.",
          ),
        approvers: UsersAndGroups.optional().describe(
          "Who may approve besides the requester, who is an approver unless allowSelfApproval is false; default the requester alone.",
        ),
        requiredApprovals: z
          .number()
          .int()
          .min(1)
          .max(10)
          .optional()
          .describe("Approvals needed; default 1."),
        allowSelfApproval: z
          .boolean()
          .optional()
          .describe(
            "Whether the requester may approve their own call (default true); set false for four-eyes.",
          ),
        subjects: UsersAndGroups.optional().describe(
          "Who may use this capability; default everyone who may create sessions here.",
        ),
        ttlSeconds: z
          .number()
          .int()
          .min(60)
          .max(604800)
          .optional()
          .describe(
            "How long an Approval stays open, in seconds; default the operator's APPROVAL_TTL_SECONDS (3600).",
          ),
      })
      .optional()
      .describe("Policy for calls of this capability."),
    disabled: z.boolean().optional().describe("Set true to refuse new calls."),
  })
  .describe("Which provider capability this grant exposes here, and the policy its calls are under.");
export type CapabilitySpec = z.infer<typeof CapabilitySpec>;

export const CapabilityStatus = z.object({
  observedGeneration: z.number().int().min(0).optional(),
  conditions: Conditions.optional().describe(conditionsDescription(CAPABILITY_VOCABULARY)),
  effect: Effect.optional().describe("What the provider declares: read, draft or write."),
  observedEffect: Effect.optional().describe(
    "The first effect seen; kept so a later weaker declaration is caught.",
  ),
  mode: Mode.optional(),
  idempotency: Idempotency.optional(),
  description: z.string().max(1024).optional(),
  inputSchema: FreeformObject.optional().describe("JSON Schema of the arguments, from the provider."),
  outputSchema: FreeformObject.optional().describe("JSON Schema of the result, from the provider."),
  schemaDigest: z.string().max(128).optional().describe("sha256 of the RFC 8785 form of both schemas."),
  toolName: z.string().max(64).optional().describe("The tool name the model sees."),
  target: TargetOffer.optional().describe(
    "The business object a call changes (kind, and the arguments naming its id and version); its version is re-checked before an approved call runs.",
  ),
});
export type CapabilityStatus = z.infer<typeof CapabilityStatus>;
