/**
 * The four Gatehouse kinds: their names, schemas and printer columns, and the typed object shapes the
 * operator works with. The CRD generator (`crd.ts`) and the controllers both read this table.
 */
import type { z } from "zod";
import { AgentSessionSpec, AgentSessionStatus } from "./agentsession.ts";
import { ApprovalSpec, ApprovalStatus } from "./approval.ts";
import { CapabilitySpec, CapabilityStatus } from "./capability.ts";
import { ProviderInstanceSpec, ProviderInstanceStatus } from "./providerinstance.ts";
import { CapabilityCondition } from "./status/capability.ts";
import { ProviderInstanceCondition } from "./status/providerinstance.ts";
import {
  AGENT_SESSION_SPEC_RULES,
  APPROVAL_SPEC_RULES,
  CAPABILITY_SPEC_RULES,
  type CelRule,
} from "./validation-rules.ts";

export const GROUP = "gatehouse.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** One additionalPrinterColumns entry (apiextensions.k8s.io/v1). */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** A kind's naming and schemas. */
export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  /** CEL rules on `spec` (validation-rules.ts). */
  specRules: CelRule[];
  printerColumns: PrinterColumn[];
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
/** The JSONPath of the condition of `type` (its `.status` or `.reason` appended). */
const conditionPath = (type: string) => `.status.conditions[?(@.type=="${type}")]`;

export const AGENT_SESSION: KindDefinition = {
  kind: "AgentSession",
  plural: "agentsessions",
  singular: "agentsession",
  shortNames: ["ags"],
  description:
    "An AI agent run on behalf of a subject; the agent may only call Capabilities, through Gatehouse Core.",
  spec: AgentSessionSpec,
  status: AgentSessionStatus,
  specRules: AGENT_SESSION_SPEC_RULES,
  printerColumns: [
    { name: "Subject", type: "string", jsonPath: ".spec.subject.user" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Turns", type: "integer", jsonPath: ".status.turns" },
    { name: "Tool Calls", type: "integer", jsonPath: ".status.toolCalls", priority: 1 },
    { name: "Pod", type: "string", jsonPath: ".status.podName", priority: 1 },
    age,
  ],
};

export const CAPABILITY: KindDefinition = {
  kind: "Capability",
  plural: "capabilities",
  singular: "capability",
  shortNames: ["cap"],
  description: "Exposes one capability of a ProviderInstance in this namespace, under an approval policy.",
  spec: CapabilitySpec,
  status: CapabilityStatus,
  specRules: CAPABILITY_SPEC_RULES,
  printerColumns: [
    { name: "Id", type: "string", jsonPath: ".spec.id" },
    { name: "Provider", type: "string", jsonPath: ".spec.providerRef.name" },
    { name: "Effect", type: "string", jsonPath: ".status.effect" },
    { name: "Approval", type: "string", jsonPath: ".spec.policy.approval", priority: 1 },
    {
      name: CapabilityCondition.Ready,
      type: "string",
      jsonPath: `${conditionPath(CapabilityCondition.Ready)}.status`,
    },
    // Ready=False has many causes (Disabled, ProviderNotReady, …): the reason says which at a glance.
    { name: "Reason", type: "string", jsonPath: `${conditionPath(CapabilityCondition.Ready)}.reason` },
    age,
  ],
};

export const PROVIDER_INSTANCE: KindDefinition = {
  kind: "ProviderInstance",
  plural: "providerinstances",
  singular: "providerinstance",
  shortNames: ["prov"],
  description: "A provider: an adapter that speaks one business system's API, run by the operator.",
  spec: ProviderInstanceSpec,
  status: ProviderInstanceStatus,
  specRules: [],
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type" },
    { name: "Placement", type: "string", jsonPath: ".spec.placement" },
    { name: "Version", type: "string", jsonPath: ".status.manifest.version" },
    {
      name: ProviderInstanceCondition.Ready,
      type: "string",
      jsonPath: `${conditionPath(ProviderInstanceCondition.Ready)}.status`,
    },
    // Ready=False has many causes (Disabled, ProviderNotReady, …): the reason says which at a glance.
    { name: "Reason", type: "string", jsonPath: `${conditionPath(ProviderInstanceCondition.Ready)}.reason` },
    age,
  ],
};

export const APPROVAL: KindDefinition = {
  kind: "Approval",
  plural: "approvals",
  singular: "approval",
  shortNames: ["apr"],
  description:
    "A human decision on one proposed capability call. Created only by the operator; approvers append decisions.",
  spec: ApprovalSpec,
  status: ApprovalStatus,
  specRules: APPROVAL_SPEC_RULES,
  printerColumns: [
    { name: "Capability", type: "string", jsonPath: ".spec.capabilityId" },
    { name: "Requester", type: "string", jsonPath: ".spec.requester.user" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Approvals", type: "integer", jsonPath: ".status.approvals" },
    { name: "Expires", type: "date", jsonPath: ".spec.expiresAt", priority: 1 },
    age,
  ],
};

export const KINDS: KindDefinition[] = [AGENT_SESSION, CAPABILITY, PROVIDER_INSTANCE, APPROVAL];

/** Object metadata as the operator reads it (a subset of metav1.ObjectMeta). */
export interface ObjectMeta {
  name: string;
  namespace: string;
  uid: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
  }>;
}

/** A custom object with typed spec and status. */
export interface Resource<Spec, Status> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type AgentSession = Resource<z.output<typeof AgentSessionSpec>, z.output<typeof AgentSessionStatus>>;
export type Capability = Resource<z.output<typeof CapabilitySpec>, z.output<typeof CapabilityStatus>>;
export type ProviderInstance = Resource<
  z.output<typeof ProviderInstanceSpec>,
  z.output<typeof ProviderInstanceStatus>
>;
export type Approval = Resource<z.output<typeof ApprovalSpec>, z.output<typeof ApprovalStatus>>;
