/**
 * Whether the admission policies that protect Approvals are, on the API server, what the chart renders
 * for this release: api/admission.ts's manifests with the controller's and the gateway's user names in
 * place of CONTROLLER_USERNAME and GATEWAY_USERNAME. A policy or binding that is missing, or differs in
 * any field that decides what it matches or refuses, counts as not enforced — a Warn binding, a selector
 * that matches nothing, an edited rule or another user exempted as "the controller" all let a decision
 * through that the
 * Approval reconciler would otherwise trust.
 *
 * Fields the API server defaults are compared with their default filled in on both sides (an
 * objectSelector must be `{}`, not merely present); metadata and status are the server's and ignored.
 * Absent, `null`, `[]` and `{}` mean the same in these APIs and compare equal.
 */
import type {
  V1MatchResources,
  V1ParamRef,
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import { admissionManifests } from "../../api/admission.ts";
import { GROUP } from "../../api/kinds.ts";
import { COMPONENT_SERVICE_ACCOUNTS, CONTROLLER_USERNAME, GATEWAY_USERNAME } from "../../api/well-known.ts";

export const POLICY_KIND = "ValidatingAdmissionPolicy";
export const BINDING_KIND = "ValidatingAdmissionPolicyBinding";

/** The policies and bindings the chart renders that protect Approvals. */
export interface RenderedAdmission {
  policies: V1ValidatingAdmissionPolicy[];
  bindings: V1ValidatingAdmissionPolicyBinding[];
}

/** What the API server holds, by name; a name without an entry is not installed. */
export interface InstalledAdmission {
  policies: ReadonlyMap<string, V1ValidatingAdmissionPolicy>;
  bindings: ReadonlyMap<string, V1ValidatingAdmissionPolicyBinding>;
}

/** True when a policy's resource rules reach Approvals (the resource, a subresource, or every resource). */
function matchesApprovals(policy: V1ValidatingAdmissionPolicy): boolean {
  return (policy.spec?.matchConstraints?.resourceRules ?? []).some(
    (rule) =>
      (rule.apiGroups ?? []).some((g) => g === GROUP || g === "*") &&
      (rule.resources ?? []).some((r) => r === "approvals" || r.startsWith("approvals/") || r === "*"),
  );
}

/**
 * The gateway's user name when it runs beside the controller `controllerUsername` (a ServiceAccount user
 * name): the gateway's ServiceAccount in the same namespace; any other user name is returned as it is.
 */
export function gatewayBeside(controllerUsername: string): string {
  const parts = controllerUsername.split(":");
  if (parts.length !== 4 || parts[0] !== "system" || parts[1] !== "serviceaccount") return controllerUsername;
  return `system:serviceaccount:${parts[2]}:${COMPONENT_SERVICE_ACCOUNTS.gateway}`;
}

/**
 * The policies of `manifests` (api/admission.ts's, by default) that match Approvals and the bindings of
 * those policies, with `controllerUsername` wherever the sources say CONTROLLER_USERNAME and
 * `gatewayUsername` wherever they say GATEWAY_USERNAME — as the chart's template substitutes the
 * release's ServiceAccounts.
 */
export function renderedApprovalAdmission(
  controllerUsername: string,
  gatewayUsername: string = gatewayBeside(controllerUsername),
  manifests: Record<string, unknown>[] = admissionManifests(),
): RenderedAdmission {
  // Quoted, as the CEL sources hold them: neither name can then match inside the other.
  const text = JSON.stringify(manifests)
    .replaceAll(`'${CONTROLLER_USERNAME}'`, `'${controllerUsername}'`)
    .replaceAll(`'${GATEWAY_USERNAME}'`, `'${gatewayUsername}'`);
  // admissionManifests builds exactly these two kinds, in the API's own JSON shape.
  const docs = JSON.parse(text) as Array<
    (V1ValidatingAdmissionPolicy | V1ValidatingAdmissionPolicyBinding) & { kind: string }
  >;
  const policies = docs
    .filter((d): d is V1ValidatingAdmissionPolicy & { kind: string } => d.kind === POLICY_KIND)
    .filter(matchesApprovals);
  const names = new Set(policies.map((p) => p.metadata?.name));
  const bindings = docs
    .filter((d): d is V1ValidatingAdmissionPolicyBinding & { kind: string } => d.kind === BINDING_KIND)
    .filter((b) => names.has(b.spec?.policyName));
  return { policies, bindings };
}

/** `match` with the API server's defaults filled in (k8s.io/api admissionregistration/v1 defaults). */
function defaultedMatch(match: V1MatchResources | undefined): V1MatchResources {
  const rules = (list: V1MatchResources["resourceRules"]) =>
    list?.map((rule) => ({ ...rule, scope: rule.scope ?? "*" }));
  return {
    ...match,
    matchPolicy: match?.matchPolicy ?? "Equivalent",
    namespaceSelector: match?.namespaceSelector ?? {},
    objectSelector: match?.objectSelector ?? {},
    ...(match?.resourceRules ? { resourceRules: rules(match.resourceRules) } : {}),
    ...(match?.excludeResourceRules ? { excludeResourceRules: rules(match.excludeResourceRules) } : {}),
  };
}

function defaultedParamRef(ref: V1ParamRef | undefined): V1ParamRef | undefined {
  return ref && { ...ref, parameterNotFoundAction: ref.parameterNotFoundAction ?? "Deny" };
}

/** The compared fields of a policy, defaults filled in. */
function policyFields(policy: V1ValidatingAdmissionPolicy): Record<string, unknown> {
  const spec = policy.spec;
  return {
    matchConstraints: defaultedMatch(spec?.matchConstraints),
    validations: spec?.validations,
    variables: spec?.variables,
    matchConditions: spec?.matchConditions,
    failurePolicy: spec?.failurePolicy ?? "Fail",
    paramKind: spec?.paramKind,
  };
}

/**
 * The compared fields of a binding, defaults filled in. An unset matchResources narrows nothing, the
 * same as one with every field at its default, so both compare as the defaulted empty one.
 */
function bindingFields(binding: V1ValidatingAdmissionPolicyBinding): Record<string, unknown> {
  const spec = binding.spec;
  return {
    policyName: spec?.policyName,
    paramRef: defaultedParamRef(spec?.paramRef),
    matchResources: defaultedMatch(spec?.matchResources),
    validationActions: spec?.validationActions,
  };
}

type Plain = string | number | boolean | Plain[] | { [key: string]: Plain };

/** `value` without undefined, null, empty lists or empty objects, keys sorted; undefined when empty. */
function canonical(value: unknown): Plain | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) {
    const items = value.map((v) => canonical(v) ?? {});
    return items.length > 0 ? items : undefined;
  }
  if (typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .flatMap((key) => {
        const v = canonical((value as Record<string, unknown>)[key]);
        return v === undefined ? [] : [[key, v] as const];
      });
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  }
  return value as Plain;
}

interface Difference {
  path: string;
  installed: Plain | undefined;
  rendered: Plain | undefined;
}

const isObject = (v: Plain | undefined): v is { [key: string]: Plain } =>
  typeof v === "object" && !Array.isArray(v);

/**
 * Where `installed` and `rendered` differ: the deepest paths both sides still have in common (a list of
 * objects of the same length item by item; a list of plain values as a whole).
 */
function differences(path: string, installed: Plain | undefined, rendered: Plain | undefined): Difference[] {
  if (isObject(installed) && isObject(rendered)) {
    const keys = [...new Set([...Object.keys(rendered), ...Object.keys(installed)])];
    return keys.flatMap((key) => differences(`${path}.${key}`, installed[key], rendered[key]));
  }
  if (
    Array.isArray(installed) &&
    Array.isArray(rendered) &&
    installed.length === rendered.length &&
    rendered.some(isObject)
  ) {
    return installed.flatMap((item, i) => differences(`${path}[${i}]`, item, rendered[i]));
  }
  return JSON.stringify(installed) === JSON.stringify(rendered) ? [] : [{ path, installed, rendered }];
}

const SHOWN_CHARACTERS = 120;

/** `[Warn]` for a list of strings, JSON otherwise; `other` says what an unset value stands for. */
function show(value: Plain | undefined, other: Plain | undefined): string {
  if (value === undefined) return Array.isArray(other) ? "[]" : isObject(other) ? "{}" : "unset";
  const text =
    Array.isArray(value) && value.every((v) => typeof v === "string")
      ? `[${value.join(", ")}]`
      : JSON.stringify(value);
  return text.length > SHOWN_CHARACTERS ? `${text.slice(0, SHOWN_CHARACTERS)}…` : text;
}

/** How many differences of one object a message names before "and N more". */
const NAMED_DIFFERENCES = 3;

/** `<Kind> <name>: <field> is <installed>, the chart renders <rendered>; …`, or undefined when equal. */
function objectDrift(
  what: string,
  installed: Record<string, unknown>,
  rendered: Record<string, unknown>,
): string | undefined {
  const found = Object.keys(rendered).flatMap((field) =>
    differences(field, canonical(installed[field]), canonical(rendered[field])),
  );
  if (found.length === 0) return undefined;
  const named = found
    .slice(0, NAMED_DIFFERENCES)
    .map(
      (d) =>
        `${d.path} is ${show(d.installed, d.rendered)}, the chart renders ${show(d.rendered, d.installed)}`,
    );
  const more = found.length > NAMED_DIFFERENCES ? `, and ${found.length - NAMED_DIFFERENCES} more` : "";
  return `${what}: ${named.join(", ")}${more}`;
}

/**
 * What is missing or different between the installed policies and bindings and the rendered ones, one
 * sentence per object (`ValidatingAdmissionPolicyBinding gatehouse-approval-decide: validationActions
 * is [Warn], the chart renders [Deny]`); empty when every one is installed as rendered.
 */
export function admissionDrift(rendered: RenderedAdmission, installed: InstalledAdmission): string[] {
  const drift: string[] = [];
  for (const policy of rendered.policies) {
    const name = policy.metadata?.name ?? "";
    const found = installed.policies.get(name);
    const problem = found
      ? objectDrift(`${POLICY_KIND} ${name}`, policyFields(found), policyFields(policy))
      : `${POLICY_KIND} ${name} is missing`;
    if (problem) drift.push(problem);
  }
  for (const binding of rendered.bindings) {
    const name = binding.metadata?.name ?? "";
    const found = installed.bindings.get(name);
    const problem = found
      ? objectDrift(`${BINDING_KIND} ${name}`, bindingFields(found), bindingFields(binding))
      : `${BINDING_KIND} ${name} is missing`;
    if (problem) drift.push(problem);
  }
  return drift;
}
