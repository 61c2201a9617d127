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
  type Rule,
  roleBinding,
  serviceAccountSubject,
} from "./rbac.ts";
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

  it("hold no pod write, status, patch, Lease or witness right; pods only listed and watched", () => {
    expect(all.filter((g) => /pods|\/status|^patch |leases|gatehouse-audit/.test(g))).toEqual([
      "list core/pods",
      "watch core/pods",
    ]);
  });

  it("name its own grant keys and the model keys, never the controller's or the witness's", () => {
    expect(all).toContain(`get core/secrets:${GRANT_KEYS_SECRETS.gateway}`);
    expect(all).toContain("get core/secrets:model-key");
    expect(
      all.filter((g) => g.includes(GRANT_KEYS_SECRETS.controller) || g.includes(WITNESS_KEY_SECRET)),
    ).toEqual([]);
    // Secrets are only ever created unnamed, or read by name: no list, no get of every Secret.
    expect(all.filter((g) => g.includes("core/secrets") && !g.includes(":"))).toEqual([
      "create core/secrets",
    ]);
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

  it("list and watch pods cluster-wide, but create and delete them only through the pod ClusterRole", () => {
    expect(all.filter((g) => g.includes("core/pods"))).toEqual(["list core/pods", "watch core/pods"]);
    expect(grants([CONTROLLER_POD_RULE])).toEqual(["get core/pods", "create core/pods", "delete core/pods"]);
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

  it("bind pods per watched namespace, identity bindings per listed namespace to both components", () => {
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
      `RoleBinding prov-a/${IDENTITY_BINDINGS_ROLE}`,
      `RoleBinding team-a/${CONTROLLER_PODS_ROLE}`,
      `RoleBinding team-b/${CONTROLLER_PODS_ROLE}`,
    ]);
    const identity = docs.find((d) => (d.metadata as { name: string }).name === IDENTITY_BINDINGS_ROLE);
    expect(identity).toEqual(
      roleBinding(IDENTITY_BINDINGS_ROLE, "prov-a", { kind: "ClusterRole", name: IDENTITY_BINDINGS_ROLE }, [
        serviceAccountSubject("gateway", "gh"),
        serviceAccountSubject("controller", "gh"),
      ]),
    );
  });

  it("bind the pod ClusterRole cluster-wide when no namespace is watched", () => {
    const docs = componentBindingManifests({
      namespace: "gh",
      modelKeySecrets: ["k"],
      identityBindingNamespaces: [],
      watchNamespaces: [],
    });
    expect(kindsAndNames(docs).at(-1)).toBe(`ClusterRoleBinding -/${CONTROLLER_PODS_ROLE}`);
    const gatewayRole = docs.find(
      (d) => d.kind === "Role" && (d.metadata as { name: string }).name === "gatehouse-gateway",
    );
    expect(gatewayRole?.rules).toEqual(gatewayRoleRules(["k"]));
  });
});
