/**
 * RBAC shipped with the API (DESIGN §7): the four persona ClusterRoles and those of the two components,
 * the gateway and the controller, each holding only what it uses.
 *
 * The shapes and builders are in rbac-objects.ts, the personas in rbac-personas.ts, what each
 * component may do in rbac-component-rules.ts and its roles' bindings in rbac-component-bindings.ts;
 * this module re-exports them all, and renders crds/rbac.yaml ({@link rbacManifests}).
 *
 * Nobody but the components gets `create` on approvals, and nobody but the controller any `*\/status`:
 * RBAC and admission both say so.
 */
import { componentClusterRoles } from "./rbac-component-bindings.ts";
import type { Manifest } from "./rbac-objects.ts";
import { personaManifests } from "./rbac-personas.ts";

export {
  type ComponentBindingOptions,
  componentBindingManifests,
  componentClusterRoles,
  EXTENSION_AUTHENTICATION_READER_ROLE,
  extensionAuthenticationReaderBinding,
} from "./rbac-component-bindings.ts";
export {
  auditWitnessRoleRules,
  CHECKPOINTS_CONFIGMAP,
  COMPONENT_RULES,
  CONTROLLER_POD_RULE,
  CONTROLLER_PODS_ROLE,
  CONTROLLER_RULES,
  componentRoleRules,
  controllerRoleRules,
  GATEWAY_RULES,
  gatewayRoleRules,
  IDENTITY_BINDING_RULE,
  IDENTITY_BINDINGS_ROLE,
  LEADER_LEASE,
  modelKeyRule,
  POD_READER_ROLE,
  POD_READER_RULES,
} from "./rbac-component-rules.ts";
export {
  clusterRole,
  clusterRoleBinding,
  type NamedRule,
  type Rule,
  roleBinding,
  type Subject,
  serviceAccountSubject,
} from "./rbac-objects.ts";
export {
  PERSONAS,
  type Persona,
  personaManifests,
  personaRole,
  TRANSCRIPT_READER_ROLE,
} from "./rbac-personas.ts";

/** Persona roles, their fragments, the transcript reader and the components' ClusterRoles (crds/rbac.yaml). */
export function rbacManifests(): Manifest[] {
  return [...personaManifests(), ...componentClusterRoles()];
}
