/**
 * The ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) and their
 * bindings that make the API server itself enforce who may create, decide and change Gatehouse objects
 * (DESIGN §2, §7). They complement RBAC (which verbs a persona has) and the CRDs' own CEL rules (what
 * may change at all): these rules need `request.userInfo`, which only admission sees.
 *
 * Every message names the broken rule and the user, so whoever is refused knows what to fix. Policies
 * fail closed (`failurePolicy: Fail`). Variables are evaluated lazily, so a rule guarded by
 * `variables.added != 1 || …` never touches an appended decision that is not there.
 *
 * Sources: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/ and
 * the CEL libraries of k8s.io/apiserver/pkg/cel/library (authorizer, lists, strings);
 * two-variable comprehensions (`all(i, v, …)`) are in the base CEL environment since Kubernetes 1.33.
 *
 * This module lists the policies and renders their manifests; the policies themselves are in
 * admission-approval.ts and admission-session.ts, what they are written in in admission-policy.ts.
 */
import {
  APPROVAL_CREATE,
  APPROVAL_DECIDE,
  APPROVAL_METADATA,
  APPROVAL_OPERATOR,
  APPROVAL_RESOLVE,
} from "./admission-approval.ts";
import { SESSION_ENGINE } from "./admission-engine.ts";
import { CONTROLLER, type PolicyDefinition, USER } from "./admission-policy.ts";
import { SESSION_CREATE, SESSION_UPDATE } from "./admission-session.ts";
import { GROUP } from "./kinds.ts";
import { StatusReason } from "./status/kubernetes.ts";
import { OPERATOR_NAMESPACE } from "./well-known.ts";

type Manifest = Record<string, unknown>;

const KIND_RESOURCES = ["agentsessions", "capabilities", "providerinstances", "approvals"];

const STATUS: PolicyDefinition = {
  name: "gatehouse-status",
  description: "Only the Gatehouse controller writes the status of Gatehouse objects.",
  operations: ["UPDATE"],
  resources: KIND_RESOURCES.map((r) => `${r}/status`),
  validations: [
    {
      expression: `${USER} == ${CONTROLLER}`,
      messageExpression: `'status-writer: the status of ' + object.kind + ' ' + object.metadata.name + ' is written only by the Gatehouse controller; ' + ${USER} + ' may not change it'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/** All policies, in the order they are shipped. */
export const POLICIES: readonly PolicyDefinition[] = [
  APPROVAL_CREATE,
  APPROVAL_METADATA,
  APPROVAL_DECIDE,
  APPROVAL_RESOLVE,
  APPROVAL_OPERATOR,
  STATUS,
  SESSION_CREATE,
  SESSION_UPDATE,
  SESSION_ENGINE,
];

const PART_OF = { "app.kubernetes.io/part-of": "gatehouse" };

/**
 * The ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding manifests of every policy; a
 * policy's parameter ConfigMap is looked up in `namespace`, the operator's.
 */
export function admissionManifests(namespace: string = OPERATOR_NAMESPACE): Manifest[] {
  return POLICIES.flatMap((p) => [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: {
        name: p.name,
        labels: PART_OF,
        annotations: { "gatehouse.dev/description": p.description },
      },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [GROUP],
              apiVersions: ["*"],
              operations: p.operations,
              resources: p.resources,
            },
          ],
        },
        ...(p.matchConditions ? { matchConditions: p.matchConditions } : {}),
        ...(p.variables ? { variables: p.variables } : {}),
        validations: p.validations,
        ...(p.params ? { paramKind: { apiVersion: "v1", kind: "ConfigMap" } } : {}),
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: p.name, labels: PART_OF },
      spec: {
        policyName: p.name,
        ...(p.params
          ? { paramRef: { name: p.params.configMap, namespace, parameterNotFoundAction: "Deny" } }
          : {}),
        validationActions: ["Deny"],
      },
    },
  ]);
}
