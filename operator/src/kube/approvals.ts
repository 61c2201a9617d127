/**
 * Core's ApprovalPort over the API server. Approvals are created with the operator's identity, owned
 * by their session (controller owner reference), named from the execution identity — so an existing
 * Approval of that name with another spec or owner is a squat and is refused (DESIGN §2). It writes no
 * status (the gateway runs it and may patch none): the controller marks a squat Failed from its
 * `approval.conflict` record (controllers/approval/conflict-sweep.ts) and a record of an unknown Auto
 * execution Unknown (controllers/approval/resolution.ts).
 */
import { isDeepStrictEqual } from "node:util";
import type { Approval } from "../api/kinds.ts";
import { API_VERSION, APPROVAL, GROUP, VERSION } from "../api/kinds.ts";
import { ApprovalPhase } from "../api/status/approval.ts";
import { APPROVAL_FINALIZER, MANAGED_BY, SESSION_UID_LABEL } from "../api/well-known.ts";
import type { ApprovalHandle, ApprovalPort, ApprovalRequest } from "../core/ports.ts";
import { settlementMessageOf } from "../transcripts/approval-outcome.ts";
import { approvalsOfSession } from "./cache-indexes.ts";
import type { Caches } from "./runtime/caches.ts";
import type { KubeClients } from "./runtime/client.ts";
import { isConflict, isNotFound } from "./runtime/client.ts";

/** The Approval spec for a request (decisions start empty). */
export function approvalSpecOf(request: ApprovalRequest): Approval["spec"] {
  return {
    executionId: request.executionId,
    sessionRef: request.sessionRef,
    capability: request.capability,
    capabilityId: request.capabilityId,
    providerRef: request.providerRef,
    arguments: request.arguments,
    argumentsDigest: request.argumentsDigest,
    schemaDigest: request.schemaDigest,
    requester: request.requester,
    approvers: request.approvers,
    requiredApprovals: request.requiredApprovals,
    allowSelfApproval: request.allowSelfApproval,
    expiresAt: request.expiresAt,
    ...(request.target ? { target: request.target } : {}),
    ...(request.idempotencyKey !== undefined ? { idempotencyKey: request.idempotencyKey } : {}),
    ...(request.autoExecution ? { autoExecution: true } : {}),
    decisions: [],
    resolutions: [],
  };
}

/** The request an Approval was created from (inverse of approvalSpecOf). */
export function requestOf(approval: Approval): ApprovalRequest {
  const { decisions: _decisions, resolutions: _resolutions, ...spec } = approval.spec;
  return {
    ...spec,
    namespace: approval.metadata.namespace,
    name: approval.metadata.name,
    providerRef: {
      namespace: spec.providerRef.namespace ?? approval.metadata.namespace,
      name: spec.providerRef.name,
    },
  };
}

function handleOf(
  approval: Approval,
  request: ApprovalRequest | undefined,
  sessionUid: string,
): ApprovalHandle {
  const owner = approval.metadata.ownerReferences?.find((o) => o.controller);
  // expiresAt is computed from the clock when a call is proposed, so a concurrent identical proposal
  // computes one a moment later: ours when it expires no later than the one we would have written.
  const {
    decisions: _decisions,
    resolutions: _resolutions,
    expiresAt: storedExpiry,
    ...stored
  } = approval.spec;
  const {
    decisions: _wanted,
    resolutions: _wantedResolutions,
    expiresAt: wantedExpiry,
    ...wanted
  } = request ? approvalSpecOf(request) : approval.spec;
  return {
    name: approval.metadata.name,
    // An Auto execution's record is Unknown from its creation: the controller writes that phase, and
    // Core reads it so before it has (the agent's answer does not wait for the reconciler).
    phase:
      approval.status?.phase ?? (approval.spec.autoExecution ? ApprovalPhase.Unknown : ApprovalPhase.Pending),
    ownedBySession: owner?.kind === "AgentSession" && owner.uid === sessionUid,
    sameSpec: isDeepStrictEqual(stored, wanted) && Date.parse(storedExpiry) <= Date.parse(wantedExpiry),
    identity: {
      executionId: approval.spec.executionId,
      capabilityId: approval.spec.capabilityId,
      argumentsDigest: approval.spec.argumentsDigest,
      sessionUid: approval.spec.sessionRef.uid,
    },
    decisions: approval.spec.decisions ?? [],
    conditionMessage: settlementMessageOf(approval),
    uid: approval.metadata.uid,
  };
}

/** Builds the port. */
export function kubeApprovalPort(clients: KubeClients, caches: Caches): ApprovalPort {
  const read = async (namespace: string, name: string): Promise<Approval | undefined> => {
    try {
      return (await clients.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: APPROVAL.plural,
        name,
      })) as Approval;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  /** Creates the Approval of `request`, or reads the existing one of that name. */
  const createOrRead = async (
    request: ApprovalRequest,
  ): Promise<{ approval: Approval; handle: ApprovalHandle; created: boolean }> => {
    const body: Approval = {
      apiVersion: API_VERSION,
      kind: "Approval",
      metadata: {
        name: request.name,
        namespace: request.namespace,
        uid: "",
        labels: { ...MANAGED_BY, [SESSION_UID_LABEL]: request.sessionRef.uid },
        finalizers: [APPROVAL_FINALIZER],
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: "AgentSession",
            name: request.sessionRef.name,
            uid: request.sessionRef.uid,
            controller: true,
          },
        ],
      },
      spec: approvalSpecOf(request),
    };
    const { uid: _uid, ...metadata } = body.metadata;
    try {
      const created = (await clients.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: request.namespace,
        plural: APPROVAL.plural,
        body: { ...body, metadata },
      })) as Approval;
      return { approval: created, handle: handleOf(created, request, request.sessionRef.uid), created: true };
    } catch (error) {
      if (!isConflict(error)) throw error;
      const existing = await read(request.namespace, request.name);
      if (!existing) throw error;
      return {
        approval: existing,
        handle: handleOf(existing, request, request.sessionRef.uid),
        created: false,
      };
    }
  };
  return {
    async get(namespace, name, sessionUid) {
      // From the informer cache: an Approval it does not show yet (created a moment ago) is met again
      // by createOrGet's 409, which recognises our own and refuses a squat, so no call needs the API.
      const approval = caches.approvals.get(name, namespace);
      return approval ? handleOf(approval, undefined, sessionUid) : undefined;
    },
    async createOrGet(request) {
      return (await createOrRead(request)).handle;
    },
    async createOrGetRecord(request) {
      // No status write: the gateway may not patch status; the approval reconciler moves the new
      // record to Unknown from its execution row.
      const { handle, created } = await createOrRead(request);
      return { handle, created };
    },
    async findRejected(query) {
      const match = approvalsOfSession(caches, query.namespace, query.sessionUid).find(
        (a) =>
          a.spec.capability === query.capability &&
          a.spec.argumentsDigest === query.argumentsDigest &&
          a.status?.phase === ApprovalPhase.Rejected,
      );
      return match ? { name: match.metadata.name } : undefined;
    },
    async findByAction(query) {
      // From the informer cache, as findRejected: an Approval created a moment ago may be missing.
      return approvalsOfSession(caches, query.namespace, query.sessionUid)
        .filter(
          (a) => a.spec.capability === query.capability && a.spec.argumentsDigest === query.argumentsDigest,
        )
        .map((a) => handleOf(a, undefined, query.sessionUid));
    },
  };
}
