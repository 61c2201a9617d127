/**
 * The Approval Core asks for when a call needs one: its spec from the session, the call and the
 * Capability's approval settings, its target, and the approvers in words.
 */
import type { JsonObject } from "./canonical.ts";
import type { ExecutionIdentity } from "./execution-identity.ts";
import { approvalSettings } from "./policy.ts";
import type {
  ApprovalRequest,
  ApprovalTarget,
  CoreDeps,
  ResolvedCapability,
  SessionContext,
} from "./ports.ts";

export function approvalRequestOf(
  deps: CoreDeps,
  session: SessionContext,
  identity: ExecutionIdentity,
  capability: ResolvedCapability,
  canonical: string,
  digest: string,
): ApprovalRequest {
  const settings = approvalSettings(capability.policy, session.subject, deps.config.approvalTtlSeconds);
  const expiresAtMs = Math.floor(deps.clock.nowMicros() / 1000) + settings.ttlSeconds * 1000;
  return {
    namespace: session.namespace,
    name: identity.approvalName,
    executionId: identity.executionId,
    sessionRef: { name: session.name, uid: session.uid },
    capability: capability.name,
    capabilityId: capability.id,
    providerRef: capability.providerRef,
    arguments: canonical,
    argumentsDigest: digest,
    schemaDigest: capability.schemaDigest,
    requester: { user: session.subject.user, groups: [...session.subject.groups] },
    approvers: settings.approvers,
    requiredApprovals: settings.requiredApprovals,
    allowSelfApproval: settings.allowSelfApproval,
    // Whole seconds: RFC 3339 without fractional digits compares cleanly in CEL and kubectl output.
    expiresAt: new Date(Math.floor(expiresAtMs / 1000) * 1000).toISOString().replace(".000Z", "Z"),
    ...targetOf(capability, canonical),
  };
}

/**
 * `{target}` from the arguments when the capability names its target arguments (a string or number
 * each); `{}` when it names none or the arguments lack them.
 */
export function targetOf(capability: ResolvedCapability, canonical: string): { target?: ApprovalTarget } {
  const offer = capability.target;
  if (!offer) return {};
  const args = JSON.parse(canonical) as JsonObject;
  const scalar = (value: unknown) =>
    typeof value === "string" || typeof value === "number" ? String(value) : undefined;
  const id = scalar(args[offer.idArgument]);
  const version = scalar(args[offer.versionArgument]);
  if (id === undefined) return {};
  return { target: { kind: offer.kind, id, ...(version !== undefined ? { version } : {}) } };
}

export function describeApprovers(request: ApprovalRequest): string {
  const who = [...request.approvers.users, ...request.approvers.groups.map((g) => `group ${g}`)].join(", ");
  const count = request.requiredApprovals > 1 ? `${request.requiredApprovals} approvals from ` : "";
  return `${count}${who}`;
}
