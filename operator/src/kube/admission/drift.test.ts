import type {
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { admissionManifests } from "../../api/admission.ts";
import { CONTROLLER_USERNAME, GATEWAY_USERNAME } from "../../api/well-known.ts";
import {
  admissionDrift,
  gatewayBeside,
  type InstalledAdmission,
  renderedApprovalAdmission,
} from "./drift.ts";

const OPERATOR = "system:serviceaccount:gatehouse-prod:gatehouse-controller";
const GATEWAY = "system:serviceaccount:gatehouse-prod:gatehouse-gateway";
const DECIDE = "gatehouse-approval-decide";
const rendered = renderedApprovalAdmission(OPERATOR, GATEWAY);

/**
 * The rendered objects as the API server returns them: defaults filled in, server-set metadata and
 * status added, and the typed client's unset properties present as undefined.
 */
function installedAsRendered(): {
  policies: Map<string, V1ValidatingAdmissionPolicy>;
  bindings: Map<string, V1ValidatingAdmissionPolicyBinding>;
} {
  const copy = structuredClone(rendered);
  const serverMetadata = { uid: "7d1c", resourceVersion: "812", generation: 1, managedFields: [{}] };
  for (const policy of copy.policies) {
    Object.assign(policy.metadata ?? {}, serverMetadata);
    const match = policy.spec?.matchConstraints ?? {};
    Object.assign(match, { matchPolicy: "Equivalent", namespaceSelector: {}, objectSelector: {} });
    for (const rule of match.resourceRules ?? []) rule.scope = "*";
    Object.assign(policy.spec ?? {}, { paramKind: undefined, auditAnnotations: undefined });
    policy.status = { observedGeneration: 1, typeChecking: {} };
  }
  for (const binding of copy.bindings) {
    Object.assign(binding.metadata ?? {}, serverMetadata);
    Object.assign(binding.spec ?? {}, { paramRef: undefined, matchResources: undefined });
  }
  return {
    policies: new Map(copy.policies.map((p) => [p.metadata?.name ?? "", p])),
    bindings: new Map(copy.bindings.map((b) => [b.metadata?.name ?? "", b])),
  };
}

type Installed = ReturnType<typeof installedAsRendered>;

/** The decide policy of `installed` (a copy the case may change). */
const decidePolicy = (installed: Installed) => installed.policies.get(DECIDE) as V1ValidatingAdmissionPolicy;
const decideBinding = (installed: Installed) =>
  installed.bindings.get(DECIDE) as V1ValidatingAdmissionPolicyBinding;

describe("which policies protect Approvals", () => {
  it("are every policy of api/admission.ts matching approvals or a subresource of it, with its binding", () => {
    expect(rendered.policies.map((p) => p.metadata?.name)).toEqual(
      expect.arrayContaining([
        "gatehouse-approval-create",
        "gatehouse-approval-metadata",
        DECIDE,
        "gatehouse-approval-resolve",
        "gatehouse-approval-operator",
        "gatehouse-status",
      ]),
    );
    expect(rendered.policies.map((p) => p.metadata?.name)).not.toContain("gatehouse-agentsession-create");
    // The engine policy guards sessions, not decisions: its ConfigMap's namespace (the release's) is no
    // part of what the decision guard compares.
    expect(rendered.policies.map((p) => p.metadata?.name)).not.toContain("gatehouse-agentsession-engine");
    expect(rendered.bindings.map((b) => b.spec?.policyName)).toEqual(
      rendered.policies.map((p) => p.metadata?.name),
    );
  });

  it("include a policy added to the sources that matches approvals, whatever its name", () => {
    const added = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: "gatehouse-approval-extra" },
      spec: {
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ["gatehouse.dev"],
              apiVersions: ["*"],
              operations: ["UPDATE"],
              resources: ["approvals"],
            },
          ],
        },
        validations: [{ expression: "true" }],
      },
    };
    const names = renderedApprovalAdmission(OPERATOR, GATEWAY, [...admissionManifests(), added]).policies.map(
      (p) => p.metadata?.name,
    );
    expect(names).toContain("gatehouse-approval-extra");
  });

  it("name the release's controller and gateway wherever the sources name CONTROLLER_USERNAME and GATEWAY_USERNAME", () => {
    const text = JSON.stringify(rendered);
    expect(text).toContain(`'${OPERATOR}'`);
    expect(text).toContain(`'${GATEWAY}'`);
    expect(text).not.toContain(CONTROLLER_USERNAME);
    expect(text).not.toContain(GATEWAY_USERNAME);
  });

  it("admit the gateway only to the create rule; every other exemption is the controller's", () => {
    const exempting = rendered.policies.filter((p) => JSON.stringify(p).includes(`'${GATEWAY}'`));
    expect(exempting.map((p) => p.metadata?.name)).toEqual(["gatehouse-approval-create"]);
    const status = rendered.policies.find((p) => p.metadata?.name === "gatehouse-status");
    expect(status?.spec?.validations?.[0]?.expression).toBe(`request.userInfo.username == '${OPERATOR}'`);
  });

  it("take the gateway beside the controller (same namespace) when it is not named", () => {
    expect(gatewayBeside(OPERATOR)).toBe(GATEWAY);
    expect(JSON.stringify(renderedApprovalAdmission(OPERATOR))).toContain(`'${GATEWAY}'`);
    expect(gatewayBeside("kubernetes-admin")).toBe("kubernetes-admin");
  });
});

describe("comparing the installed policies with the rendered ones", () => {
  it("finds nothing when the server holds them as rendered, with its defaults and metadata", () => {
    expect(admissionDrift(rendered, installedAsRendered())).toEqual([]);
  });

  it("counts a binding with every matchResources field at its default as rendered", () => {
    const installed = installedAsRendered();
    Object.assign(decideBinding(installed).spec ?? {}, {
      matchResources: {
        matchPolicy: "Equivalent",
        namespaceSelector: {},
        objectSelector: { matchLabels: {} },
      },
    });
    expect(admissionDrift(rendered, installed)).toEqual([]);
  });

  const cases: Array<[string, (installed: Installed) => void, string]> = [
    [
      "a missing binding",
      (i) => i.bindings.delete(DECIDE),
      `ValidatingAdmissionPolicyBinding ${DECIDE} is missing`,
    ],
    [
      "a missing policy",
      (i) => i.policies.delete("gatehouse-approval-create"),
      "ValidatingAdmissionPolicy gatehouse-approval-create is missing",
    ],
    [
      "a Warn binding",
      (i) => {
        const spec = decideBinding(i).spec;
        if (spec) spec.validationActions = ["Warn"];
      },
      `ValidatingAdmissionPolicyBinding ${DECIDE}: validationActions is [Warn], the chart renders [Deny]`,
    ],
    [
      "a binding whose objectSelector matches nothing",
      (i) => {
        Object.assign(decideBinding(i).spec ?? {}, {
          matchResources: { objectSelector: { matchLabels: { "example.com/never": "x" } } },
        });
      },
      `ValidatingAdmissionPolicyBinding ${DECIDE}: matchResources.objectSelector is {"matchLabels":{"example.com/never":"x"}}, the chart renders {}`,
    ],
    [
      "a binding that excludes approvals",
      (i) => {
        Object.assign(decideBinding(i).spec ?? {}, {
          matchResources: {
            excludeResourceRules: [
              {
                apiGroups: ["gatehouse.dev"],
                apiVersions: ["*"],
                operations: ["*"],
                resources: ["approvals"],
              },
            ],
          },
        });
      },
      `ValidatingAdmissionPolicyBinding ${DECIDE}: matchResources.excludeResourceRules is [{"apiGroups":["gatehouse.dev"],"apiVersions":["*"],"operations":["*"],"resources":["approvals"],"scope":"*"}], the chart renders []`,
    ],
    [
      "a binding of another policy",
      (i) => {
        const spec = decideBinding(i).spec;
        if (spec) spec.policyName = "gatehouse-status";
      },
      `ValidatingAdmissionPolicyBinding ${DECIDE}: policyName is "gatehouse-status", the chart renders "${DECIDE}"`,
    ],
    [
      "a binding with a paramRef",
      (i) => {
        Object.assign(decideBinding(i).spec ?? {}, { paramRef: { name: "p" } });
      },
      `ValidatingAdmissionPolicyBinding ${DECIDE}: paramRef is {"name":"p","parameterNotFoundAction":"Deny"}, the chart renders {}`,
    ],
    [
      "a policy whose namespaceSelector matches only some namespaces",
      (i) => {
        Object.assign(decidePolicy(i).spec?.matchConstraints ?? {}, {
          namespaceSelector: { matchLabels: { audited: "true" } },
        });
      },
      `ValidatingAdmissionPolicy ${DECIDE}: matchConstraints.namespaceSelector is {"matchLabels":{"audited":"true"}}, the chart renders {}`,
    ],
    [
      "a policy with matchPolicy Exact",
      (i) => {
        Object.assign(decidePolicy(i).spec?.matchConstraints ?? {}, { matchPolicy: "Exact" });
      },
      `ValidatingAdmissionPolicy ${DECIDE}: matchConstraints.matchPolicy is "Exact", the chart renders "Equivalent"`,
    ],
    [
      "a policy whose rule has another scope",
      (i) => {
        const rule = decidePolicy(i).spec?.matchConstraints?.resourceRules?.[0];
        if (rule) rule.scope = "Cluster";
      },
      `ValidatingAdmissionPolicy ${DECIDE}: matchConstraints.resourceRules[0].scope is "Cluster", the chart renders "*"`,
    ],
    [
      "a policy that ignores its own failures",
      (i) => {
        Object.assign(decidePolicy(i).spec ?? {}, { failurePolicy: "Ignore" });
      },
      `ValidatingAdmissionPolicy ${DECIDE}: failurePolicy is "Ignore", the chart renders "Fail"`,
    ],
    [
      "a policy whose validation was edited",
      (i) => {
        const validation = decidePolicy(i).spec?.validations?.[4];
        if (validation) validation.expression = "true";
      },
      `ValidatingAdmissionPolicy ${DECIDE}: validations[4].expression is "true", the chart renders "!oldObject.spec.decisions.exists(d, d.approver == request.userInfo.username)"`,
    ],
    [
      "a policy with a validation removed",
      (i) => {
        decidePolicy(i).spec?.validations?.pop();
      },
      `ValidatingAdmissionPolicy ${DECIDE}: validations is [{"expression":`,
    ],
    [
      "a policy that exempts another user as the operator",
      (i) => {
        const condition = decidePolicy(i).spec?.matchConditions?.[0];
        if (condition) condition.expression = "request.userInfo.username != 'mallory'";
      },
      `ValidatingAdmissionPolicy ${DECIDE}: matchConditions[0].expression is "request.userInfo.username != 'mallory'", the chart renders "request.userInfo.username != '${OPERATOR}'"`,
    ],
    [
      "a policy whose variable was edited",
      (i) => {
        const variable = decidePolicy(i).spec?.variables?.find((v) => v.name === "isApprover");
        if (variable) variable.expression = "true";
      },
      `ValidatingAdmissionPolicy ${DECIDE}: variables[3].expression is "true", the chart renders`,
    ],
    [
      "a policy given a paramKind",
      (i) => {
        Object.assign(decidePolicy(i).spec ?? {}, { paramKind: { apiVersion: "v1", kind: "ConfigMap" } });
      },
      `ValidatingAdmissionPolicy ${DECIDE}: paramKind is {"apiVersion":"v1","kind":"ConfigMap"}, the chart renders {}`,
    ],
  ];

  it.each(cases)("counts %s as not enforced, naming what differs", (_case, tamper, message) => {
    const installed = installedAsRendered();
    tamper(installed);
    const drift = admissionDrift(rendered, installed);
    expect(drift).toHaveLength(1);
    expect(drift[0]).toContain(message);
  });

  it("names each object that differs, and at most three differences of one", () => {
    const installed = installedAsRendered();
    installed.bindings.delete(DECIDE);
    for (const validation of decidePolicy(installed).spec?.validations ?? []) validation.expression = "true";
    const drift = admissionDrift(rendered, installed);
    expect(drift).toHaveLength(2);
    expect(drift[0]).toMatch(/^ValidatingAdmissionPolicy gatehouse-approval-decide: .*, and \d+ more$/);
    expect(drift[0]?.match(/ is "true"/g)).toHaveLength(3);
    expect(drift[1]).toBe(`ValidatingAdmissionPolicyBinding ${DECIDE} is missing`);
  });

  it("counts a policy rendered for another controller as not enforced", () => {
    const other = renderedApprovalAdmission(
      "system:serviceaccount:gatehouse-system:gatehouse-operator",
      GATEWAY,
    );
    const installed: InstalledAdmission = {
      policies: new Map(other.policies.map((p) => [p.metadata?.name ?? "", p])),
      bindings: new Map(other.bindings.map((b) => [b.metadata?.name ?? "", b])),
    };
    expect(admissionDrift(rendered, installed).join("\n")).toMatch(
      /gatehouse-approval-create: validations\[0\]/,
    );
  });
});

describe("a policy rendered for another gateway", () => {
  it("counts as not enforced: the create rule admits someone else", () => {
    const other = renderedApprovalAdmission(OPERATOR, "system:serviceaccount:gatehouse-prod:someone");
    const installed: InstalledAdmission = {
      policies: new Map(other.policies.map((p) => [p.metadata?.name ?? "", p])),
      bindings: new Map(other.bindings.map((b) => [b.metadata?.name ?? "", b])),
    };
    expect(admissionDrift(rendered, installed)).toEqual([
      expect.stringMatching(/^ValidatingAdmissionPolicy gatehouse-approval-create: validations\[0\]/),
    ]);
  });
});
