/**
 * The admission policies of Approvals (api/admission.ts): who creates one, who changes its metadata,
 * who appends a decision or a resolution, and what the operator itself may change; with the custom
 * RBAC verbs they check.
 */
import {
  CONTROLLER,
  GARBAGE_COLLECTOR,
  GATEWAY,
  GROUPS,
  type PolicyDefinition,
  sameMetadata,
  USER,
} from "./admission-policy.ts";
import { GROUP } from "./kinds.ts";
import { StatusReason } from "./status/kubernetes.ts";
import { APPROVAL_FINALIZER } from "./well-known.ts";

/** `metadata.finalizers` of `o` (absent counts as empty). */
const FINALIZERS = (o: string) => `(has(${o}.metadata.finalizers) ? ${o}.metadata.finalizers : [])`;

/** `metadata.finalizers` of `o` without the operator's own Approval finalizer. */
const OTHER_FINALIZERS = (o: string) => `${FINALIZERS(o)}.filter(f, f != '${APPROVAL_FINALIZER}')`;

/** The finalizers of an Approval other than the operator's own are unchanged. */
const OTHER_FINALIZERS_UNCHANGED = `${OTHER_FINALIZERS("object")} == ${OTHER_FINALIZERS("oldObject")}`;

/** The update removes the operator's own Approval finalizer and changes no other finalizer. */
const OWN_FINALIZER_REMOVED = `'${APPROVAL_FINALIZER}' in ${FINALIZERS("oldObject")} && !('${APPROVAL_FINALIZER}' in ${FINALIZERS("object")}) && ${OTHER_FINALIZERS_UNCHANGED}`;

/**
 * The custom RBAC verb on approvals that lets a person remove the operator's finalizer by hand (when
 * no operator will ever run again); cluster-admin holds it through `*`. The chain then shows that
 * Approval's request without an end.
 */
export const RELEASE_VERB = "release";

/**
 * The custom RBAC verb on approvals that lets a person append a resolution of an Unknown execution
 * outcome (`spec.resolutions`); gatehouse-platform grants it.
 */
export const RESOLVE_VERB = "resolve";

/** `spec.resolutions` of `o` (absent on objects stored before the field existed counts as empty). */
const RESOLUTIONS = (o: string) => `(has(${o}.spec.resolutions) ? ${o}.spec.resolutions : [])`;

/** The Approval records an Auto execution (`spec.autoExecution`): it takes no decisions. */
const AUTO_EXECUTION = "has(oldObject.spec.autoExecution) && oldObject.spec.autoExecution";

export const APPROVAL_CREATE: PolicyDefinition = {
  name: "gatehouse-approval-create",
  description:
    "Approvals are created only by the Gatehouse gateway or controller, without decisions or resolutions, so nobody can pre-create or pre-decide one.",
  operations: ["CREATE"],
  resources: ["approvals"],
  validations: [
    {
      expression: `${USER} == ${GATEWAY} || ${USER} == ${CONTROLLER}`,
      messageExpression: `'approval-create: only the Gatehouse gateway and controller create Approvals; ' + ${USER} + ' may not (approvers append a decision to an existing Approval instead)'`,
      reason: StatusReason.Forbidden,
    },
    // The creator is the proposer, never an approver: a decision or resolution born with the object
    // would be counted without the decide and resolve rules ever judging it.
    {
      expression: "!has(object.spec.decisions) || size(object.spec.decisions) == 0",
      messageExpression: `'approval-create: Approval ' + object.metadata.name + ' is created without decisions; approvers append theirs to it afterwards (' + ${USER} + ' may not create one already decided)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `size(${RESOLUTIONS("object")}) == 0`,
      messageExpression: `'approval-create: Approval ' + object.metadata.name + ' is created without resolutions; the platform team resolves an Unknown outcome afterwards (' + ${USER} + ' may not create one already resolved)'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/**
 * Labels and annotations of an Approval are anyone's whom RBAC lets patch it (a team's own bookkeeping,
 * the annotation client-side `kubectl apply` records): nothing in Gatehouse reads them. ownerReferences
 * tie it to its session for the garbage collector, the operator's finalizer keeps its end in the audit
 * chain: those are the operator's, and nobody adds a finalizer of their own (it would pin the Approval).
 */
export const APPROVAL_METADATA: PolicyDefinition = {
  name: "gatehouse-approval-metadata",
  description:
    "Everyone but the operator and the garbage collector leaves an Approval's ownerReferences and finalizers as they are (a holder of the custom verb release may remove the operator's finalizer); labels and annotations are free.",
  operations: ["UPDATE"],
  resources: ["approvals"],
  matchConditions: [
    { name: "not-the-operator", expression: `${USER} != ${CONTROLLER}` },
    // It removes ownerReferences (and the orphan finalizer) when an owner is deleted with --cascade=orphan.
    { name: "not-garbage-collection", expression: `${USER} != ${GARBAGE_COLLECTOR}` },
  ],
  // `authorizer` is available to expressions but not to messageExpressions: the release rule is its
  // own validation, and its message cannot say whether the caller holds the verb.
  validations: [
    {
      expression: sameMetadata("ownerReferences", "[]"),
      messageExpression: `'approval-owner-references: the ownerReferences of Approval ' + object.metadata.name + ' tie it to its AgentSession and are the operator\\'s; ' + ${USER} + ' may not change them (labels and annotations may change)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `${sameMetadata("finalizers", "[]")} || (${OWN_FINALIZER_REMOVED} && authorizer.group('${GROUP}').resource('approvals').namespace(object.metadata.namespace).name(object.metadata.name).check('${RELEASE_VERB}').allowed())`,
      messageExpression: `'approval-finalizers: ' + ${USER} + ' may not add or remove finalizers of Approval ' + object.metadata.name + ': the finalizer ${APPROVAL_FINALIZER} is the operator\\'s (only a holder of the RBAC verb ${RELEASE_VERB} on approvals may remove it by hand, when no operator will run again), and no other finalizer may be added (labels and annotations may change)'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/** Name of the policy (and binding) that enforces the decision rules; the operator checks it exists. */
export const DECISION_POLICY = "gatehouse-approval-decide";

export const APPROVAL_DECIDE: PolicyDefinition = {
  name: DECISION_POLICY,
  description:
    "Everyone but the operator changes spec.decisions of an Approval only by appending one decision of their own, as a listed approver, while it is Pending.",
  operations: ["UPDATE"],
  resources: ["approvals"],
  // The rest of the spec is immutable (the CRD's rules), its metadata gatehouse-approval-metadata's.
  matchConditions: [
    { name: "not-the-operator", expression: `${USER} != ${CONTROLLER}` },
    { name: "a-decision-change", expression: "object.spec.decisions != oldObject.spec.decisions" },
    // A change of spec.resolutions is gatehouse-approval-resolve's to judge (it refuses decisions beside it).
    { name: "not-a-resolution", expression: `${RESOLUTIONS("object")} == ${RESOLUTIONS("oldObject")}` },
  ],
  variables: [
    { name: "added", expression: "size(object.spec.decisions) - size(oldObject.spec.decisions)" },
    { name: "appended", expression: "object.spec.decisions[size(object.spec.decisions) - 1]" },
    { name: "isRequester", expression: `${USER} == oldObject.spec.requester.user` },
    {
      name: "isApprover",
      expression: `${USER} in oldObject.spec.approvers.users || ${GROUPS}.exists(g, g in oldObject.spec.approvers.groups)`,
    },
    {
      name: "phase",
      expression: "has(oldObject.status) && has(oldObject.status.phase) ? oldObject.status.phase : 'Pending'",
    },
  ],
  validations: [
    {
      expression: "variables.phase == 'Pending'",
      messageExpression: `'decision-closed: Approval ' + object.metadata.name + ' is ' + variables.phase + ' and takes no more decisions; ' + ${USER} + ' may not change it'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "variables.added == 1 && oldObject.spec.decisions.all(i, d, object.spec.decisions[i] == d)",
      messageExpression: `'decision-append: ' + ${USER} + ' may only append exactly one decision at the end of spec.decisions, with a JSON patch {"op":"add","path":"/spec/decisions/-","value":{"approver":"' + ${USER} + '","verdict":"Approve"}}'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `variables.added != 1 || variables.appended.approver == ${USER}`,
      messageExpression: `'decision-own-name: ' + ${USER} + ' may append a decision only in their own name, not as ' + variables.appended.approver`,
      reason: StatusReason.Forbidden,
    },
    {
      expression:
        "variables.added != 1 || variables.isApprover || (variables.isRequester && variables.appended.verdict == 'Reject')",
      messageExpression: `'decision-approver: ' + ${USER} + ' is not an approver of Approval ' + object.metadata.name + ' (approvers: users [' + oldObject.spec.approvers.users.join(', ') + '], groups [' + oldObject.spec.approvers.groups.join(', ') + '])' + (variables.isRequester ? '; as its requester, ' + ${USER} + ' may only reject it (self-approval is off)' : '')`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `!oldObject.spec.decisions.exists(d, d.approver == ${USER})`,
      // Names the decision already recorded, so whoever re-submits sees what stands; at most 32
      // decisions (the CRD's maxItems) bound the cost.
      messageExpression: `'decision-once: ' + ${USER} + ' has already decided Approval ' + object.metadata.name + ': ' + oldObject.spec.decisions.transformList(i, d, d.approver == ${USER}, d.verdict + ' (spec.decisions[' + string(i) + '])')[0] + '; each user decides once'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression:
        "variables.added != 1 || !(variables.isRequester && variables.appended.verdict == 'Approve' && !oldObject.spec.allowSelfApproval)",
      messageExpression: `'decision-self-approval: ' + ${USER} + ' requested this call and self-approval is not allowed for it; another approver must approve (the requester may still reject)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `!(${AUTO_EXECUTION})`,
      messageExpression: `'decision-auto-execution: Approval ' + object.metadata.name + ' records a call that ran without approval; it takes no decisions (a holder of the verb resolve settles its outcome with kubectl gatehouse resolve); ' + ${USER} + ' may not change it'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

export const APPROVAL_RESOLVE: PolicyDefinition = {
  name: "gatehouse-approval-resolve",
  description:
    "A holder of the custom verb resolve on approvals settles an Unknown execution outcome by appending one resolution of their own, once, and changes no decision with it.",
  operations: ["UPDATE"],
  resources: ["approvals"],
  matchConditions: [
    { name: "not-the-operator", expression: `${USER} != ${CONTROLLER}` },
    { name: "a-resolution", expression: `${RESOLUTIONS("object")} != ${RESOLUTIONS("oldObject")}` },
  ],
  variables: [
    { name: "old", expression: RESOLUTIONS("oldObject") },
    { name: "new", expression: RESOLUTIONS("object") },
    { name: "added", expression: "size(variables.new) - size(variables.old)" },
    { name: "appended", expression: "variables.new[size(variables.new) - 1]" },
    {
      name: "phase",
      expression: "has(oldObject.status) && has(oldObject.status.phase) ? oldObject.status.phase : 'Pending'",
    },
  ],
  // `authorizer` is available to expressions but not to messageExpressions: the verb check has a
  // validation of its own.
  validations: [
    {
      expression: `authorizer.group('${GROUP}').resource('approvals').namespace(object.metadata.namespace).name(object.metadata.name).check('${RESOLVE_VERB}').allowed()`,
      messageExpression: `'resolution-verb: ' + ${USER} + ' may resolve Approval ' + object.metadata.name + ' only with the RBAC verb ${RESOLVE_VERB} on approvals (granted by gatehouse-platform)'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "variables.phase == 'Unknown'",
      messageExpression: `'resolution-not-unknown: Approval ' + object.metadata.name + ' is ' + variables.phase + '; only an Approval whose execution outcome is Unknown takes a resolution'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "variables.added == 1 && variables.old.all(i, r, variables.new[i] == r)",
      messageExpression: `'resolution-append: ' + ${USER} + ' may only append exactly one resolution at the end of spec.resolutions, with a JSON patch {"op":"add","path":"/spec/resolutions/-","value":{"resolver":"' + ${USER} + '","outcome":"Succeeded","reason":"…"}}'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: `variables.added != 1 || variables.appended.resolver == ${USER}`,
      messageExpression: `'resolution-own-name: ' + ${USER} + ' may append a resolution only in their own name, not as ' + variables.appended.resolver`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "size(variables.old) == 0",
      messageExpression: `'resolution-once: Approval ' + object.metadata.name + ' is already resolved by ' + variables.old[0].resolver + ' (' + variables.old[0].outcome + '); its outcome is settled once'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "object.spec.decisions == oldObject.spec.decisions",
      messageExpression: `'resolution-only: ' + ${USER} + ' may append a resolution or a decision to Approval ' + object.metadata.name + ', not both in one request; its decisions stay as they are (use kubectl gatehouse resolve)'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

export const APPROVAL_OPERATOR: PolicyDefinition = {
  name: "gatehouse-approval-operator",
  description:
    "The operator changes an Approval (outside its status) only to add or remove its own finalizer, besides the labels and annotations anyone may change: decisions are people's, and the rest is immutable.",
  operations: ["UPDATE"],
  resources: ["approvals"],
  matchConditions: [{ name: "the-operator", expression: `${USER} == ${CONTROLLER}` }],
  validations: [
    {
      expression: `object.spec == oldObject.spec && ${sameMetadata("ownerReferences", "[]")} && ${OTHER_FINALIZERS_UNCHANGED}`,
      messageExpression: `'approval-operator: the operator may only add or remove the finalizer ${APPROVAL_FINALIZER} of Approval ' + object.metadata.name + ' (and change labels and annotations); its spec, decisions, ownerReferences and other finalizers are not the operator\\'s to change'`,
      reason: StatusReason.Forbidden,
    },
  ],
};
