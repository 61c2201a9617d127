/** Time, logging, sessions and capabilities: what Core knows of the caller and what it may call; ../ports.ts gathers every port. */

import type { Effect, Idempotency, Mode, Subject, TargetOffer } from "@gatehouse/provider-sdk";
import type { ApprovalMode } from "../../api/status/capability.ts";

// ---------------------------------------------------------------------------------------------------
// Time and logging

/** Wall clock. `nowMicros()` is integer microseconds since the epoch (`Date.now() * 1000` is fine). */
export interface Clock {
  nowMicros(): number;
}

/** Waiting inside Core: real time in the operator, simulated time (the test clock advances) in tests. */
export interface Timer {
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
}

/** The subset of a pino logger Core uses (a pino `Logger` satisfies it). No argument values: digests. */
export interface CoreLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

// ---------------------------------------------------------------------------------------------------
// Sessions and capabilities

/** A set of principals, as in `spec.policy.approvers` / `spec.policy.subjects`. */
export interface PrincipalSet {
  users: string[];
  groups: string[];
}

/** Effective session limits (minimum of the user's value and the operator's ceiling, DESIGN §2). */
export interface SessionLimits {
  /** A call in turn `maxTurns` or later (turns count from 0) is denied. */
  maxTurns: number;
  maxToolCalls: number;
  maxWrites: number;
}

/**
 * The authenticated session a call comes from, as the gateway built it after TokenReview (DESIGN §4
 * step 1) or as a controller read it from its cache.
 */
export interface SessionContext {
  namespace: string;
  name: string;
  uid: string;
  /** `spec.subject`: who the agent acts for. */
  subject: Subject;
  /** `spec.capabilities`: Capability object names the session may see; `undefined` = all in the namespace. */
  capabilities?: readonly string[];
  limits: SessionLimits;
  /** False once the session is finished, cancelled or being deleted: nothing new is executed for it. */
  active: boolean;
}

/** `spec.policy.approval` of a Capability. Any other string read from an object is treated as unknown → denied. */
export type { ApprovalMode };

/** `spec.policy` of a Capability, defaults not yet applied (see `core/policy.ts`). */
export interface CapabilityPolicy {
  /** Explicit approval mode; absent → by effect. A string outside {@link ApprovalMode} is denied. */
  approval?: string;
  /** Absent → the requester alone. */
  approvers?: PrincipalSet;
  /** Absent → 1. */
  requiredApprovals?: number;
  /** Absent → true (the requester confirming their own intent is the base case). */
  allowSelfApproval?: boolean;
  /** Who may use the capability; absent or empty → everyone who may create sessions in the namespace. */
  subjects?: PrincipalSet;
  /** Approval lifetime in seconds; absent → `CoreConfig.approvalTtlSeconds`. */
  ttlSeconds?: number;
}

/** A ProviderInstance reference with its namespace filled in. */
export interface ProviderRef {
  namespace: string;
  name: string;
}

/** A Capability object joined with what its provider offers, as the catalog sees it now. */
export interface ResolvedCapability {
  /** Capability object name. */
  name: string;
  namespace: string;
  /** `spec.id`, e.g. `aps.schedule.publish`. */
  id: string;
  /** Model-facing name: `id` with `.` → `_`. */
  toolName: string;
  /** `status.effect`; a string outside read|draft|write is unknown → denied. */
  effect: Effect | string;
  mode: Mode;
  idempotency: Idempotency;
  policy: CapabilityPolicy;
  /** JSON Schema of the arguments (`status.inputSchema`). */
  inputSchema: Record<string, unknown>;
  /** `status.schemaDigest`. */
  schemaDigest: string;
  /** `status.target`: which arguments name the business object a call changes, when the provider says. */
  target?: TargetOffer;
  providerRef: ProviderRef;
  /** The provider's manifest says it needs the subject mapped to a business account. */
  requiresIdentity: boolean;
  /** Capability `Ready=True`. */
  ready: boolean;
  /** ProviderInstance `Ready=True`. */
  providerReady: boolean;
  /** `spec.disabled` of the Capability or of its ProviderInstance. */
  disabled: boolean;
  /** The Ready condition's reason when not ready (e.g. `EffectChanged`), for the message. */
  notReadyReason?: string;
}

/** Looks up Capabilities (backed by the informer cache in the operator). */
export interface CapabilityCatalog {
  /** The Capability in `namespace` whose tool name is `toolName`, or undefined. */
  resolve(namespace: string, toolName: string): Promise<ResolvedCapability | undefined>;
  /** The Capability object `namespace/name`, or undefined (used when dispatching an Approval). */
  get(namespace: string, name: string): Promise<ResolvedCapability | undefined>;
}

/** Result of mapping a subject to a business account (DESIGN §4 step 5). */
export type IdentityBinding = { bound: true; account: string } | { bound: false; reason: string };

/** Maps subjects to business accounts through the identity-binding Secrets of a ProviderInstance. */
export interface IdentityResolver {
  resolve(provider: ProviderRef, subject: Subject): Promise<IdentityBinding>;
}
