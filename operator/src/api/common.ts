/**
 * Building blocks shared by the four kinds: metav1.Condition, subjects, references. Only zod features
 * that map to structural schemas are used (DESIGN §2): objects, bounded strings with RE2-safe patterns,
 * enums, plain-bounded integers, arrays with maxItems, and records as preserve-unknown-fields.
 */
import { z } from "zod";
import { CONDITION_STATUSES } from "./status/kubernetes.ts";

/** A DNS-1123 label (Kubernetes object names for most kinds): ≤ 63 lowercase alphanumerics or '-'. */
export const Dns1123Label = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
  .describe("A DNS-1123 label: lowercase letters, digits and '-', at most 63 characters.");

/** A DNS-1123 subdomain (names of most objects): ≤ 253 characters. */
export const Dns1123Subdomain = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/)
  .describe("A DNS-1123 subdomain: lowercase dot-separated labels, at most 253 characters.");

/** metav1.Condition (k8s.io/apimachinery/pkg/apis/meta/v1/types.go). */
export const Condition = z.object({
  type: z.string().max(316).describe("Condition type in CamelCase, e.g. Ready."),
  status: z.enum(CONDITION_STATUSES),
  observedGeneration: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("The .metadata.generation this condition was set for."),
  lastTransitionTime: z.string().describe("When status last changed (RFC 3339)."),
  reason: z.string().max(1024).describe("Stable CamelCase reason, matched by tests and runbooks."),
  message: z.string().max(32768).describe("Human-readable details."),
});
export type Condition = z.infer<typeof Condition>;

/** Conditions list, keyed by type. */
export const Conditions = z.array(Condition).max(16);

/** A user and their groups, as Kubernetes authentication reports them. */
export const Subject = z.object({
  user: z
    .string()
    .min(1)
    .max(253)
    .describe("User name as Kubernetes authenticates it (request.userInfo.username)."),
  groups: z.array(z.string().max(253)).max(64).default([]).describe("Groups of that user."),
});
export type Subject = z.infer<typeof Subject>;

/** Named users and groups (approvers, subjects allowed to use a capability). */
export const UsersAndGroups = z.object({
  users: z.array(z.string().max(253)).max(64).default([]).describe("User names."),
  groups: z.array(z.string().max(253)).max(64).default([]).describe("Group names."),
});
export type UsersAndGroups = z.infer<typeof UsersAndGroups>;

/** Reference to a ProviderInstance (another namespace is not supported yet). */
export const ProviderRef = z.object({
  name: Dns1123Label.describe("Name of the ProviderInstance."),
  namespace: Dns1123Label.optional().describe(
    "Namespace of the ProviderInstance; defaults to this object's namespace. Another namespace is not supported yet: a Capability naming one stays Ready=False (ProviderNotReady); leave this unset.",
  ),
});
export type ProviderRef = z.infer<typeof ProviderRef>;

/** A free-form JSON object, stored as preserve-unknown-fields. */
export const FreeformObject = z.record(z.string(), z.unknown());
