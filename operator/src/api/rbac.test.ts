import { describe, expect, it } from "vitest";
import {
  CONTROLLER_POD_RULE,
  CONTROLLER_PODS_ROLE,
  CONTROLLER_RULES,
  componentBindingManifests,
  controllerRoleRules,
  GATEWAY_RULES,
  gatewayRoleRules,
  IDENTITY_BINDINGS_ROLE,
  type NamedRule,
  POD_READER_ROLE,
  POD_READER_RULES,
  personaManifests,
  type Rule,
  roleBinding,
  serviceAccountSubject,
  TRANSCRIPT_READER_ROLE,
} from "./rbac.ts";
import { GET_ANY_VERB } from "./transcripts-api.ts";
import { GRANT_KEYS_SECRETS, WITNESS_KEY_SECRET } from "./well-known.ts";

/** `verb group/resource` of every rule (with `:name` when it names objects). */
const grants = (rules: readonly (Rule | NamedRule)[]) =>
  rules.flatMap((r) =>
    r.apiGroups.flatMap((g) =>
      r.resources.flatMap((res) =>
        r.verbs.flatMap((v) =>
          ("resourceNames" in r && r.resourceNames ? r.resourceNames : [undefined]).map(
            (n) => `${v} ${g || "core"}/${res}${n ? `:${n}` : ""}`,
          ),
        ),
      ),
    ),
  );

describe("the gateway's rules", () => {
  const all = [...grants(GATEWAY_RULES), ...grants(gatewayRoleRules(["model-key"]))];

  it("hold no pod right, status, patch, Lease or witness right (pods are read through the pod reader)", () => {
    expect(all.filter((g) => /pods|endpointslices|\/status|^patch |leases|gatehouse-audit/.test(g))).toEqual(
      [],
    );
  });

  it("name its own grant keys and the model keys, never the controller's or the witness's", () => {
    expect(all).toContain(`get core/secrets:${GRANT_KEYS_SECRETS.gateway}`);
    expect(all).toContain("get core/secrets:model-key");
    expect(
      all.filter((g) => g.includes(GRANT_KEYS_SECRETS.controller) || g.includes(WITNESS_KEY_SECRET)),
    ).toEqual([]);
    // Secrets only by name: no list, no get of every Secret, and no create (a service-account-token
    // Secret it created would be filled with the controller's token; the controller creates its Secret).
    expect(all.filter((g) => g.includes("core/secrets") && !g.includes(":"))).toEqual([]);
  });

  it("give no model key rule without model key Secrets", () => {
    expect(grants(gatewayRoleRules([])).filter((g) => g.startsWith("get core/secrets"))).toEqual([
      `get core/secrets:${GRANT_KEYS_SECRETS.gateway}`,
    ]);
  });
});

describe("the controller's rules", () => {
  const all = [...grants(CONTROLLER_RULES), ...grants(controllerRoleRules())];

  it("review no tokens and read no model key or gateway grant key", () => {
    expect(all.filter((g) => /tokenreviews|gatehouse-gateway-grant-keys|model/.test(g))).toEqual([]);
  });

  it("touch pods and EndpointSlices only through the pod ClusterRoles (bound per watched namespace)", () => {
    expect(all.filter((g) => /core\/pods|endpointslices/.test(g))).toEqual([]);
    expect(grants([CONTROLLER_POD_RULE])).toEqual(["get core/pods", "create core/pods", "delete core/pods"]);
    expect(grants(POD_READER_RULES)).toEqual([
      "list core/pods",
      "watch core/pods",
      "list discovery.k8s.io/endpointslices",
      "watch discovery.k8s.io/endpointslices",
    ]);
  });

  it("list no Secrets cluster-wide", () => {
    expect(all.filter((g) => g.startsWith("list core/secrets"))).toEqual([]);
  });
});

describe("componentBindingManifests", () => {
  const kindsAndNames = (docs: Record<string, unknown>[]) =>
    docs.map((d) => {
      const m = d.metadata as { name: string; namespace?: string };
      return `${d.kind} ${m.namespace ?? "-"}/${m.name}`;
    });

  it("bind pod writes (controller) and reads (both) per watched namespace, identity bindings per listed namespace to both", () => {
    const docs = componentBindingManifests({
      namespace: "gh",
      modelKeySecrets: [],
      identityBindingNamespaces: ["prov-a"],
      watchNamespaces: ["team-a", "team-b"],
    });
    expect(kindsAndNames(docs)).toEqual([
      "ClusterRoleBinding -/gatehouse-gateway",
      "Role gh/gatehouse-gateway",
      "RoleBinding gh/gatehouse-gateway",
      "ClusterRoleBinding -/gatehouse-controller",
      "Role gh/gatehouse-controller",
      "RoleBinding gh/gatehouse-controller",
      // The front proxy's settings, for the transcripts API.
      "RoleBinding kube-system/gatehouse-gateway-authentication-reader",
      `RoleBinding prov-a/${IDENTITY_BINDINGS_ROLE}`,
      `RoleBinding team-a/${CONTROLLER_PODS_ROLE}`,
      `RoleBinding team-b/${CONTROLLER_PODS_ROLE}`,
      `RoleBinding team-a/${POD_READER_ROLE}`,
      `RoleBinding team-b/${POD_READER_ROLE}`,
    ]);
    const reader = docs.find(
      (d) =>
        (d.metadata as { name: string; namespace?: string }).name === POD_READER_ROLE &&
        (d.metadata as { namespace?: string }).namespace === "team-a",
    );
    expect(reader).toEqual(
      roleBinding(POD_READER_ROLE, "team-a", { kind: "ClusterRole", name: POD_READER_ROLE }, [
        serviceAccountSubject("gateway", "gh"),
        serviceAccountSubject("controller", "gh"),
      ]),
    );
    const identity = docs.find((d) => (d.metadata as { name: string }).name === IDENTITY_BINDINGS_ROLE);
    expect(identity).toEqual(
      // The controller alone: the gateway reads the bindings it publishes, never a Secret.
      roleBinding(IDENTITY_BINDINGS_ROLE, "prov-a", { kind: "ClusterRole", name: IDENTITY_BINDINGS_ROLE }, [
        serviceAccountSubject("controller", "gh"),
      ]),
    );
  });

  it("bind the pod ClusterRoles cluster-wide when no namespace is watched", () => {
    const docs = componentBindingManifests({
      namespace: "gh",
      modelKeySecrets: ["k"],
      identityBindingNamespaces: [],
      watchNamespaces: [],
    });
    expect(kindsAndNames(docs).slice(-2)).toEqual([
      `ClusterRoleBinding -/${CONTROLLER_PODS_ROLE}`,
      `ClusterRoleBinding -/${POD_READER_ROLE}`,
    ]);
    const gatewayRole = docs.find(
      (d) => d.kind === "Role" && (d.metadata as { name: string }).name === "gatehouse-gateway",
    );
    expect(gatewayRole?.rules).toEqual(gatewayRoleRules(["k"]));
  });
});

describe("transcript access", () => {
  type Role = { metadata: { name: string; labels?: Record<string, string> }; rules?: Rule[] };
  const roles = personaManifests() as unknown as Role[];
  /** The roles whose rules grant `verb` on agentsessiontranscripts, and the aggregations they join. */
  const holders = (verb: string) =>
    roles
      .filter((r) =>
        (r.rules ?? []).some(
          (rule) =>
            rule.apiGroups.includes("transcripts.gatehouse.dev") &&
            rule.resources.includes("agentsessiontranscripts") &&
            rule.verbs.includes(verb),
        ),
      )
      .map((r) => ({
        name: r.metadata.name,
        aggregates: Object.keys(r.metadata.labels ?? {}).filter((l) => l.includes("aggregate-to")),
      }));

  it("gives session users get (their own sessions' transcripts) and nobody get-any but the explicitly bound reader", () => {
    expect(holders("get")).toEqual([
      { name: TRANSCRIPT_READER_ROLE, aggregates: [] },
      { name: "gatehouse-aggregate-session-user", aggregates: ["gatehouse.dev/aggregate-to-session-user"] },
    ]);
    // Bound explicitly by the platform: aggregated into nothing, so `view`, `edit` and the personas lack it.
    expect(holders(GET_ANY_VERB)).toEqual([{ name: TRANSCRIPT_READER_ROLE, aggregates: [] }]);
  });
});
