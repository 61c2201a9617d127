/**
 * Which engines an installation allows (api/admission.ts): the schema of spec.engine lists every engine
 * the agent image carries; this policy narrows it to those ConfigMap `gatehouse-engines` in the
 * operator's namespace lists (chart value `engines.allowed`, default builtin).
 *
 * The ConfigMap is the binding's `paramRef` with a namespace: one list for the whole cluster, kept where
 * only the platform writes. A paramRef without one would read the ConfigMap of the session's own
 * namespace, which whoever may write ConfigMaps there could fill in to allow any engine.
 * `parameterNotFoundAction: Deny`: without the ConfigMap no session is created (fail closed).
 * CREATE only: spec.engine is immutable (validation-rules.ts), so a session keeps the engine it was
 * admitted with, also after the list changes.
 */
import type { PolicyDefinition } from "./admission-policy.ts";
import { StatusReason } from "./status/kubernetes.ts";

/** The ConfigMap that lists the allowed engines, in the operator's namespace. */
export const ENGINES_CONFIGMAP = "gatehouse-engines";
/** Its data key: engine names separated by commas. */
export const ENGINES_ALLOWED_KEY = "allowed";
/** The chart value the ConfigMap is rendered from. */
export const ENGINES_CHART_VALUE = "engines.allowed";

export const SESSION_ENGINE: PolicyDefinition = {
  name: "gatehouse-agentsession-engine",
  description: `A session runs only an engine this installation allows: spec.engine is one of ConfigMap ${ENGINES_CONFIGMAP}'s list (chart value ${ENGINES_CHART_VALUE}).`,
  operations: ["CREATE"],
  resources: ["agentsessions"],
  params: { configMap: ENGINES_CONFIGMAP },
  variables: [
    // The API server defaults spec.engine before admission; an absent one would run as builtin.
    { name: "engine", expression: "has(object.spec.engine) ? object.spec.engine : 'builtin'" },
    {
      name: "allowed",
      expression: `has(params.data) && '${ENGINES_ALLOWED_KEY}' in params.data ? params.data['${ENGINES_ALLOWED_KEY}'].split(',').map(e, e.trim()).filter(e, e != '') : []`,
    },
  ],
  validations: [
    {
      expression: "variables.engine in variables.allowed",
      messageExpression: `'session-engine: spec.engine ' + variables.engine + ' is not allowed in this installation; allowed: ' + (size(variables.allowed) == 0 ? 'none' : variables.allowed.join(', ')) + '. A platform engineer allows an engine with the chart value ${ENGINES_CHART_VALUE} (ConfigMap ' + params.metadata.namespace + '/' + params.metadata.name + ')'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/** The ConfigMap listing `allowed` in `namespace` (the chart renders it; deploy/ holds the local one). */
export function enginesConfigMap(namespace: string, allowed: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: ENGINES_CONFIGMAP, namespace, labels: { "app.kubernetes.io/part-of": "gatehouse" } },
    data: { [ENGINES_ALLOWED_KEY]: allowed },
  };
}
