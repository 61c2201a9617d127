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
 *
 * The external engine runs an image the session names (spec.agent.image), so it is gated by image, not
 * by name: a session with spec.engine external is admitted only if its image is, character for
 * character, one of the ConfigMap's `externalImages` (chart value `engines.externalImages`, default
 * none, which refuses every external session). Exact match, no prefixes or patterns: a listed digest
 * (`repo@sha256:…`) pins the bytes that run; a listed tag trusts whoever may push it.
 */
import type { PolicyDefinition } from "./admission-policy.ts";
import { StatusReason } from "./status/kubernetes.ts";

/** The ConfigMap that lists the allowed engines, in the operator's namespace. */
export const ENGINES_CONFIGMAP = "gatehouse-engines";
/** Its data key: engine names separated by commas. */
export const ENGINES_ALLOWED_KEY = "allowed";
/** The chart value the ConfigMap is rendered from. */
export const ENGINES_CHART_VALUE = "engines.allowed";
/** Its data key for the external engine's images: image references separated by commas. */
export const EXTERNAL_IMAGES_KEY = "externalImages";
/** The chart value that key is rendered from. */
export const EXTERNAL_IMAGES_CHART_VALUE = "engines.externalImages";

/** `key` of the ConfigMap as a list: comma-separated, trimmed, empty entries dropped. */
const listOf = (key: string) =>
  `has(params.data) && '${key}' in params.data ? params.data['${key}'].split(',').map(e, e.trim()).filter(e, e != '') : []`;

export const SESSION_ENGINE: PolicyDefinition = {
  name: "gatehouse-agentsession-engine",
  description: `A session runs only an engine this installation allows: spec.engine is one of ConfigMap ${ENGINES_CONFIGMAP}'s list (chart value ${ENGINES_CHART_VALUE}); an external session's spec.agent.image is one of its ${EXTERNAL_IMAGES_KEY} (chart value ${EXTERNAL_IMAGES_CHART_VALUE}).`,
  operations: ["CREATE"],
  resources: ["agentsessions"],
  params: { configMap: ENGINES_CONFIGMAP },
  variables: [
    // The API server defaults spec.engine before admission; an absent one would run as builtin.
    { name: "engine", expression: "has(object.spec.engine) ? object.spec.engine : 'builtin'" },
    { name: "allowed", expression: listOf(ENGINES_ALLOWED_KEY) },
    { name: "images", expression: listOf(EXTERNAL_IMAGES_KEY) },
    // The schema's rules (validation-rules.ts) already require spec.agent with external; '' never matches.
    {
      name: "image",
      expression: "has(object.spec.agent) && has(object.spec.agent.image) ? object.spec.agent.image : ''",
    },
  ],
  validations: [
    {
      // external is gated by its image list below, not by this list.
      expression: "variables.engine == 'external' || variables.engine in variables.allowed",
      messageExpression: `'session-engine: spec.engine ' + variables.engine + ' is not allowed in this installation; allowed: ' + (size(variables.allowed) == 0 ? 'none' : variables.allowed.join(', ')) + '. A platform engineer allows an engine with the chart value ${ENGINES_CHART_VALUE} (ConfigMap ' + params.metadata.namespace + '/' + params.metadata.name + ')'`,
      reason: StatusReason.Forbidden,
    },
    {
      expression: "variables.engine != 'external' || variables.image in variables.images",
      messageExpression: `'session-engine: spec.agent.image ' + variables.image + ' is not allowed in this installation; allowed: ' + (size(variables.images) == 0 ? 'none' : variables.images.join(', ')) + '. A platform engineer allows an agent image with the chart value ${EXTERNAL_IMAGES_CHART_VALUE} (ConfigMap ' + params.metadata.namespace + '/' + params.metadata.name + '), exactly as spec.agent.image spells it'`,
      reason: StatusReason.Forbidden,
    },
  ],
};

/**
 * The ConfigMap listing `allowed` engines and the external engine's `externalImages` (both
 * comma-separated) in `namespace` (the chart renders it; deploy/ holds the local one).
 */
export function enginesConfigMap(
  namespace: string,
  allowed: string,
  externalImages = "",
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: ENGINES_CONFIGMAP, namespace, labels: { "app.kubernetes.io/part-of": "gatehouse" } },
    data: { [ENGINES_ALLOWED_KEY]: allowed, [EXTERNAL_IMAGES_KEY]: externalImages },
  };
}
