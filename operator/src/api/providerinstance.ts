/** ProviderInstance (`prov`): a running adapter to one business system (DESIGN §2). */
import { CapabilityId, Effect, Idempotency, Mode } from "@gatehouse/provider-sdk";
import { z } from "zod";
import { Conditions, FreeformObject } from "./common.ts";
import { PROVIDER_INSTANCE_VOCABULARY } from "./status/providerinstance.ts";
import { conditionsDescription } from "./status/words.ts";

export const ProviderInstanceSpec = z
  .object({
    type: z.string().min(1).max(63).describe("Provider type, e.g. aps."),
    image: z.string().min(1).max(512).describe("Container image of the provider."),
    placement: z
      .enum(["Shared", "Sidecar"])
      .default("Shared")
      .describe(
        "Shared: a Deployment and Service reached only by the operator. Sidecar: inside each agent pod (read/draft only).",
      ),
    replicas: z.number().int().min(0).max(20).default(1).describe("Replicas of a Shared provider."),
    config: z
      .record(z.string(), z.string())
      .optional()
      .describe("Non-secret settings, passed to the provider as environment variables."),
    auth: z
      .object({
        kind: z.enum(["none", "apikey", "oauth", "password-exchange"]).default("none"),
        secretRef: z
          .object({ name: z.string().max(253) })
          .optional()
          .describe("Secret holding the business credentials."),
      })
      .optional(),
    allowedNamespaces: FreeformObject.optional().describe(
      "A namespace label selector of other namespaces whose Capabilities may use this provider.",
    ),
    disabled: z.boolean().optional().describe("Refuse new calls; keep the workloads."),
    resources: FreeformObject.optional().describe("Container resources (corev1.ResourceRequirements)."),
  })
  .describe("Which provider to run and how the operator runs and reaches it.");
export type ProviderInstanceSpec = z.infer<typeof ProviderInstanceSpec>;

export const ManifestSummary = z.object({
  provider: z.string().max(63),
  version: z.string().max(64),
  requiresIdentity: z.boolean(),
  capabilities: z
    .array(
      z.object({
        id: CapabilityId,
        effect: Effect,
        mode: Mode,
        idempotency: Idempotency,
        schemaDigest: z.string().max(128),
      }),
    )
    .max(256),
});

export const ProviderInstanceStatus = z.object({
  observedGeneration: z.number().int().min(0).optional(),
  conditions: Conditions.optional().describe(conditionsDescription(PROVIDER_INSTANCE_VOCABULARY)),
  manifest: ManifestSummary.optional().describe("What the provider last declared at /v1/manifest."),
  endpoints: z
    .array(z.string().max(256))
    .max(20)
    .optional()
    .describe("Addresses the operator reaches the provider at."),
  lastHealthCheck: z.string().optional(),
});
export type ProviderInstanceStatus = z.infer<typeof ProviderInstanceStatus>;
