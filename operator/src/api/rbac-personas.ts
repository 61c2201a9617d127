/**
 * The persona ClusterRoles shipped with the API (api/rbac.ts, DESIGN §7) and the transcript reader.
 *
 * The personas are aggregated ClusterRoles, the way Kubernetes builds admin/edit/view: each persona
 * selects rule fragments by the label `gatehouse.dev/aggregate-to-<persona>: "true"`, so a platform
 * team extends a persona by labelling a ClusterRole of its own. Bind them with RoleBindings per
 * namespace. The read fragment also aggregates into the built-in `view` role.
 *
 *   gatehouse-view          read the four kinds
 *   gatehouse-session-user  + create and patch AgentSessions (admission: only as their own subject),
 *                             read their own sessions' transcripts (get; TRANSCRIPT_READER_ROLE
 *                             reads anyone's, get-any, and is bound explicitly)
 *   gatehouse-approver      + patch Approvals (admission: only to append their own decision)
 *   gatehouse-platform      + write Capabilities and ProviderInstances (policy authority), delete
 *                             AgentSessions and cancel them (the custom verb `cancel`, plus patch,
 *                             which admission narrows to setting spec.cancel); never Approvals, which
 *                             are evidence and the operator's to keep
 */
import { RESOLVE_VERB } from "./admission-approval.ts";
import { GROUP } from "./kinds.ts";
import { clusterRole, KINDS, type Manifest, PART_OF, type Rule } from "./rbac-objects.ts";
import { GET_ANY_VERB, TRANSCRIPTS_GROUP, TRANSCRIPTS_RESOURCE } from "./transcripts-api.ts";

export const PERSONAS = ["view", "session-user", "approver", "platform"] as const;
export type Persona = (typeof PERSONAS)[number];

const READ = ["get", "list", "watch"];

/** The persona ClusterRole's name. */
export function personaRole(persona: Persona): string {
  return `gatehouse-${persona}`;
}

function aggregateLabel(persona: Persona): string {
  return `${GROUP}/aggregate-to-${persona}`;
}

/** A rule fragment, aggregated into the given personas. */
function fragment(
  name: string,
  personas: readonly Persona[],
  rules: Rule[],
  extra: Record<string, string> = {},
) {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name,
      labels: {
        ...PART_OF,
        ...Object.fromEntries(personas.map((p) => [aggregateLabel(p), "true"])),
        ...extra,
      },
    },
    rules,
  };
}

function persona(p: Persona): Manifest {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: personaRole(p), labels: PART_OF },
    // No `rules`: the clusterrole-aggregation controller owns them, and a server-side apply that
    // names them would conflict with it.
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregateLabel(p)]: "true" } }] },
  };
}

/**
 * Reads any session's transcript in the namespaces where it is bound (verbs `get` and `get-any` on
 * agentsessiontranscripts; api/transcripts-api.ts). In no persona and not in `view`: a transcript holds
 * what the agent fetched under its subject's business identity, so the platform grants it explicitly,
 * e.g. to approvers who need a session's context. A session's subject reads their own through
 * `gatehouse-session-user` (verb `get`).
 */
export const TRANSCRIPT_READER_ROLE = "gatehouse-transcript-reader";

/** The persona ClusterRoles, their aggregated rule fragments, and the transcript reader. */
export function personaManifests(): Manifest[] {
  return [
    ...PERSONAS.map(persona),
    clusterRole(TRANSCRIPT_READER_ROLE, [
      { apiGroups: [TRANSCRIPTS_GROUP], resources: [TRANSCRIPTS_RESOURCE], verbs: ["get", GET_ANY_VERB] },
    ]),
    fragment("gatehouse-aggregate-read", PERSONAS, [{ apiGroups: [GROUP], resources: KINDS, verbs: READ }], {
      "rbac.authorization.k8s.io/aggregate-to-view": "true",
    }),
    fragment(
      "gatehouse-aggregate-session-user",
      ["session-user"],
      [
        { apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["create", "patch", "update"] },
        // Their own sessions' transcripts only: the transcripts API checks the session's subject.
        { apiGroups: [TRANSCRIPTS_GROUP], resources: [TRANSCRIPTS_RESOURCE], verbs: ["get"] },
      ],
    ),
    fragment(
      "gatehouse-aggregate-approver",
      ["approver"],
      [{ apiGroups: [GROUP], resources: ["approvals"], verbs: ["patch", "update"] }],
    ),
    fragment(
      "gatehouse-aggregate-platform",
      ["platform"],
      [
        {
          apiGroups: [GROUP],
          resources: ["capabilities", "providerinstances"],
          verbs: ["create", "update", "patch", "delete", "deletecollection"],
        },
        { apiGroups: [GROUP], resources: ["agentsessions"], verbs: ["patch", "update", "delete", "cancel"] },
        // Settling an Unknown outcome takes someone who can check the business system: the platform
        // team. Admission lets `patch` append only a resolution (or, as a listed approver, a decision).
        { apiGroups: [GROUP], resources: ["approvals"], verbs: ["patch", "update", RESOLVE_VERB] },
      ],
    ),
  ];
}
