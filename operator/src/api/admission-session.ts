/**
 * The admission policies of AgentSessions (api/admission.ts): a session is created only for its
 * creator, and changed only by its subject (a holder of the verb cancel may set spec.cancel alone).
 */
import {
  CONTROLLER,
  GARBAGE_COLLECTOR,
  GROUPS,
  type PolicyDefinition,
  sameMetadata,
  USER,
} from "./admission-policy.ts";
import { AgentSessionSpec } from "./agentsession.ts";
import { GROUP } from "./kinds.ts";
import { StatusReason } from "./status/kubernetes.ts";
import { unchanged } from "./validation-rules.ts";

/** Labels, annotations, finalizers and ownerReferences are unchanged. */
const SAME_METADATA = [
  sameMetadata("labels", "{}"),
  sameMetadata("annotations", "{}"),
  sameMetadata("finalizers", "[]"),
  sameMetadata("ownerReferences", "[]"),
].join(" && ");

/**
 * The garbage collector's own updates: it removes ownerReferences (and the orphan finalizer) when an
 * owner is deleted with `--cascade=orphan`, and changes nothing else (spec is the CRD rules' to guard).
 */
const GARBAGE_COLLECTION = `${USER} == ${GARBAGE_COLLECTOR} && ${sameMetadata("labels", "{}")} && ${sameMetadata("annotations", "{}")}`;

export const SESSION_CREATE: PolicyDefinition = {
  name: "gatehouse-agentsession-create",
  description:
    "A session acts for the user who creates it: spec.subject.user is the caller, spec.subject.groups a subset of the caller's groups.",
  operations: ["CREATE"],
  resources: ["agentsessions"],
  variables: [
    {
      name: "claimed",
      expression: "has(object.spec.subject.groups) ? object.spec.subject.groups : []",
    },
  ],
  validations: [
    {
      expression: `object.spec.subject.user == ${USER}`,
      messageExpression: `'session-subject: spec.subject.user must be the creating user; ' + ${USER} + ' may not create a session for ' + object.spec.subject.user + ' (set spec.subject.user to ' + ${USER} + ')'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `variables.claimed.all(g, g in ${GROUPS})`,
      messageExpression: `'session-groups: spec.subject.groups may list only groups of ' + ${USER} + '; not a member of: ' + variables.claimed.filter(g, !(g in ${GROUPS})).join(', ')`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/** Every field of AgentSession.spec except `cancel` is unchanged. */
const SPEC_BUT_CANCEL_UNCHANGED = Object.keys(AgentSessionSpec.shape)
  .filter((key) => key !== "cancel")
  .map((key) => unchanged(AgentSessionSpec.shape, key, "object.spec", "oldObject.spec"))
  .join(" && ");

export const SESSION_UPDATE: PolicyDefinition = {
  name: "gatehouse-agentsession-update",
  description:
    "Only the subject changes a session (appends a message, cancels, edits its metadata); a holder of the custom verb cancel on agentsessions may set spec.cancel and nothing else. A Failed or Cancelled session takes no more messages.",
  operations: ["UPDATE"],
  resources: ["agentsessions"],
  matchConditions: [
    { name: "not-the-operator", expression: `${USER} != ${CONTROLLER}` },
    {
      name: "not-garbage-collection",
      expression: `!(${GARBAGE_COLLECTION} && object.spec == oldObject.spec)`,
    },
  ],
  variables: [
    { name: "isSubject", expression: `${USER} == oldObject.spec.subject.user` },
    { name: "specChanged", expression: "object.spec != oldObject.spec" },
    { name: "onlyCancelChanged", expression: SPEC_BUT_CANCEL_UNCHANGED },
    {
      // Failed and Cancelled are final; a Completed session continues when a message is appended.
      name: "ended",
      expression:
        "(has(oldObject.spec.cancel) && oldObject.spec.cancel) || (has(oldObject.status) && has(oldObject.status.phase) && oldObject.status.phase in ['Failed', 'Cancelled'])",
    },
  ],
  // `authorizer` is available to expressions but not to messageExpressions, so the cancel-verb check
  // has a validation of its own.
  validations: [
    {
      expression: "!variables.specChanged || variables.isSubject || variables.onlyCancelChanged",
      messageExpression: `'session-owner: only the subject (' + oldObject.spec.subject.user + ') may change the spec of AgentSession ' + object.metadata.name + '; ' + ${USER} + ' may not (a holder of the cancel verb on agentsessions may set spec.cancel alone)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `!variables.specChanged || variables.isSubject || !variables.onlyCancelChanged || authorizer.group('${GROUP}').resource('agentsessions').namespace(object.metadata.namespace).name(object.metadata.name).check('cancel').allowed()`,
      messageExpression: `'session-cancel: ' + ${USER} + ' may set spec.cancel of AgentSession ' + object.metadata.name + ' only with the RBAC verb cancel on agentsessions (granted by gatehouse-platform)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "!variables.ended || size(object.spec.messages) == size(oldObject.spec.messages)",
      messageExpression: `'session-ended: spec.messages of AgentSession ' + object.metadata.name + ' takes no more messages: ' + (has(oldObject.spec.cancel) && oldObject.spec.cancel ? 'spec.cancel is set' : 'it is ' + oldObject.status.phase) + ', so it runs no more turns and a message appended to it would never be answered; create a new AgentSession to go on'`,
      reason: StatusReason.Invalid,
    },
    {
      // Labels, finalizers and ownerReferences steer controllers and the garbage collector: an
      // ownerReference to anything deleted would delete the session, a finalizer would pin it.
      expression: `variables.isSubject || ${SAME_METADATA}`,
      messageExpression: `'session-metadata: only the subject (' + oldObject.spec.subject.user + ') and the operator may change the labels, annotations, finalizers or ownerReferences of AgentSession ' + object.metadata.name + '; ' + ${USER} + ' may not'`,
      reason: StatusReason.Forbidden,
    },
  ],
};
