/**
 * What the `aps` provider offers (DESIGN §1): read a production plan, draft a shifted copy, publish a
 * draft. Input schemas are strict (no extra properties) because they are the model-facing tool contract
 * and Core validates against them before anything is approved or executed.
 */
import type { CapabilityOffer, Manifest } from "@gatehouse/provider-sdk";

const planId = {
  type: "string",
  description: "Plan id, e.g. plan-2026-w49 (the plan of ISO week 49 of 2026).",
  pattern: "^[a-z0-9]+(-[a-z0-9]+)*$",
  maxLength: 64,
};

const line = {
  type: "object",
  properties: {
    lineId: { type: "string" },
    resource: { type: "string" },
    product: { type: "string" },
    quantity: { type: "number" },
    start: { type: "string", description: "First day, YYYY-MM-DD." },
    end: { type: "string", description: "Last day (inclusive), YYYY-MM-DD." },
  },
  required: ["lineId", "resource", "product", "quantity", "start", "end"],
};

const planVersion = {
  type: "object",
  properties: {
    id: { type: "string" },
    week: { type: "string" },
    version: { type: "integer" },
    status: { type: "string", enum: ["published", "draft", "superseded"] },
    basedOnVersion: { type: ["integer", "null"] },
    lines: { type: "array", items: line },
  },
  required: ["id", "week", "version", "status", "lines"],
};

/** `aps.schedule.read`: the currently published version of a plan. Safe to repeat. */
export const readOffer: CapabilityOffer = {
  id: "aps.schedule.read",
  description: "Read the currently published version of a production plan: its week, version and lines.",
  effect: "read",
  mode: "sync",
  idempotency: "natural",
  inputSchema: {
    type: "object",
    properties: { planId },
    required: ["planId"],
    additionalProperties: false,
  },
  outputSchema: planVersion,
};

/** `aps.schedule.draft`: an isolated draft copy shifted by whole days; never visible on the shop floor. */
export const draftOffer: CapabilityOffer = {
  id: "aps.schedule.draft",
  description:
    "Create an isolated draft of a production plan with every line moved by shiftDays days. " +
    "Returns the draft with its new version number; nothing is published.",
  effect: "draft",
  mode: "sync",
  idempotency: "key",
  inputSchema: {
    type: "object",
    properties: {
      planId,
      shiftDays: {
        type: "integer",
        description: "Whole days to move every line; negative moves earlier.",
        minimum: -28,
        maximum: 28,
      },
    },
    required: ["planId", "shiftDays"],
    additionalProperties: false,
  },
  outputSchema: planVersion,
};

/**
 * `aps.schedule.publish`: makes a draft version the live plan. The APS checks the acting account's
 * right. Its target is the plan at the draft's version: Core re-reads the plan's current (newest)
 * version before dispatching an approved publish and refuses it as Stale when the plan moved on.
 */
export const publishOffer: CapabilityOffer = {
  id: "aps.schedule.publish",
  description:
    "Publish a draft version of a production plan so it becomes the live plan. " +
    "The version must be a draft based on the currently published version.",
  effect: "write",
  mode: "sync",
  idempotency: "key",
  target: { kind: "plan", idArgument: "planId", versionArgument: "version" },
  inputSchema: {
    type: "object",
    properties: {
      planId,
      version: { type: "integer", description: "The draft version to publish.", minimum: 1 },
    },
    required: ["planId", "version"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      planId: { type: "string" },
      version: { type: "integer" },
      status: { type: "string", const: "published" },
      publicationId: { type: "string" },
      publishedBy: { type: "string" },
      publishedAt: { type: "string", description: "RFC 3339 time of the publish." },
    },
    required: ["planId", "version", "status", "publicationId"],
  },
};

/**
 * The `aps` provider's manifest. It requires identity: every call acts as the subject's bound APS
 * account, so the APS's own rights decide (DESIGN §1 step 6: bob may draft but not publish).
 */
export const apsManifest: Manifest = {
  provider: "aps",
  version: "0.2.0",
  requiresIdentity: true,
  capabilities: [readOffer, draftOffer, publishOffer],
};
