/**
 * The Helm chart `charts/gatehouse` with Helm built from its Go module (test/helm/build.sh): it lints
 * and renders for every `ci/*.yaml`, its schema refuses bad values naming the field, and what it
 * renders is what the operator and the API expect — no cluster needed (the server-side dry run is
 * test/cluster-tests/chart-dry-run.test.ts).
 */
import { X509Certificate } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { V1Deployment, V1EnvVar, V1Job } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CONTROLLER_POD_RULE,
  CONTROLLER_RULES,
  controllerRoleRules,
  GATEWAY_RULES,
  gatewayRoleRules,
  IDENTITY_BINDING_RULE,
  modelKeyRule,
  POD_READER_RULES,
  TRANSCRIPT_READER_ROLE,
} from "../../operator/src/api/rbac.ts";
import { TRANSCRIPTS_API_SERVICE } from "../../operator/src/api/transcripts-api.ts";
import {
  configFromEnvironment,
  DEFAULT_GATEWAY_LIMITS,
  DEFAULT_GATEWAY_POSTGRES_POOL_SIZE,
} from "../../operator/src/config.ts";
import { agentNetworkPolicy } from "../../operator/src/controllers/agentsession/reconciler.ts";
import { chartComponentEnv, chartNodeOptions } from "../e2e/component-node-options.ts";
import {
  CHART_DIR,
  helm,
  KUBE_VERSION,
  type Manifest,
  renderChart,
  resolveHelm,
  templateArgs,
} from "../helm/helm.ts";

const CI_FILES = readdirSync(join(CHART_DIR, "ci"))
  .filter((f) => f.endsWith(".yaml"))
  .sort();
const KEEP = "helm.sh/resource-policy";
const API_KINDS = new Set([
  "CustomResourceDefinition",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
]);

const find = (manifests: Manifest[], kind: string, name?: string) =>
  manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
const one = (manifests: Manifest[], kind: string, name?: string): Manifest => {
  const found = find(manifests, kind, name);
  expect(found, `${kind} ${name ?? ""}`).toHaveLength(1);
  return found[0]!;
};
const rulesOf = (m: Manifest) => m.rules as Array<Record<string, unknown>>;

/** The Deployment of component `component` (`<release>-<component>`). */
const deploymentOf = (manifests: Manifest[], component: "gateway" | "controller", release = "gatehouse") =>
  one(manifests, "Deployment", `${release}-${component}`);

/**
 * A component container's environment with downward-API and Secret references resolved as a node
 * would: `secrets` maps `<Secret name>/<key>` to the value; a string is every key's value.
 */
function resolvedEnv(deployment: Manifest, secrets: string | Record<string, string>): NodeJS.ProcessEnv {
  const env = (deployment as unknown as V1Deployment | V1Job).spec!.template.spec!.containers[0]!
    .env as V1EnvVar[];
  const out: NodeJS.ProcessEnv = {};
  for (const v of env) {
    if (v.value !== undefined) out[v.name] = v.value;
    else if (v.valueFrom?.fieldRef?.fieldPath === "metadata.name") out[v.name] = "gatehouse-operator-abc12";
    else if (v.valueFrom?.fieldRef?.fieldPath === "metadata.namespace")
      out[v.name] = deployment.metadata.namespace;
    else if (v.valueFrom?.secretKeyRef) {
      const ref = `${v.valueFrom.secretKeyRef.name}/${v.valueFrom.secretKeyRef.key}`;
      const value = typeof secrets === "string" ? secrets : secrets[ref];
      if (value === undefined) throw new Error(`env ${v.name} names Secret key ${ref}, which the test lacks`);
      out[v.name] = value;
    } else throw new Error(`unexpected env ${v.name}`);
  }
  return out;
}

beforeAll(async () => {
  await resolveHelm();
}, 3_600_000);

describe("helm lint and helm template", () => {
  it("lints the chart with its default values and the values without a default: both runtime logins, the identity-binding namespaces", async () => {
    const result = await helm([
      "lint",
      "--strict",
      CHART_DIR,
      "--set",
      "database.runtime.controller.secretName=gatehouse-controller-db",
      "--set",
      "database.runtime.gateway.secretName=gatehouse-gateway-db",
      "--set",
      "rbac.identityBindingNamespaces={plant-a}",
    ]);
    expect(result.stdout + result.stderr, "helm lint").toContain("0 chart(s) failed");
    expect(result.code).toBe(0);
  });

  it.each([
    ["no database values at all", []],
    [
      "only the owner's URL (what a release whose operator migrated itself had)",
      ["--set", "database.url=postgres://owner@db/g"],
    ],
  ])(
    "refuses to render with %s, naming database.runtime.controller and docs/upgrading.md",
    async (_, args) => {
      const result = await helm([
        "template",
        "gatehouse",
        CHART_DIR,
        "--set",
        "rbac.identityBindingNamespaces={plant-a}",
        ...args,
      ]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(
        "database.runtime.controller.secretName (or database.runtime.controller.url) is required",
      );
      expect(result.stderr).toContain("never the owner's; see docs/upgrading.md");
    },
  );

  it.each([
    "database.operatorUrl=postgres://gatehouse_operator@db/g",
    "database.operatorSecretName=prod-postgres-operator",
    "database.operatorSecretKey=url",
  ])("refuses the removed value in --set %s, naming its successor and docs/upgrading.md", async (set) => {
    const result = await helm([
      "template",
      "gatehouse",
      CHART_DIR,
      "-f",
      join(CHART_DIR, "ci", "default.yaml"),
      "--set",
      set,
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      "database.operatorUrl, database.operatorSecretName and database.operatorSecretKey are gone",
    );
    expect(result.stderr).toContain("database.runtime.controller.url");
    expect(result.stderr).toContain("docs/upgrading.md");
  });

  it.each(CI_FILES)(`lints and renders for Kubernetes ${KUBE_VERSION} with ci/%s`, async (file) => {
    const lint = await helm(["lint", "--strict", CHART_DIR, "-f", join(CHART_DIR, "ci", file)]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const manifests = await renderChart({ valuesFiles: [`charts/gatehouse/ci/${file}`] });
    expect(find(manifests, "Deployment").map((d) => d.metadata.name)).toEqual([
      "gatehouse-gateway",
      "gatehouse-controller",
    ]);
    expect(find(manifests, "CustomResourceDefinition")).toHaveLength(4);
  });

  it("covers at least the default, HA with ServiceMonitor and external database cases", () => {
    expect(CI_FILES).toEqual(
      expect.arrayContaining(["default.yaml", "ha-with-servicemonitor.yaml", "external-database.yaml"]),
    );
  });

  it("refuses a Kubernetes older than 1.33", async () => {
    const result = await helm(["template", "gatehouse", CHART_DIR, "--kube-version", "1.32.9"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("kubeVersion: >=1.33.0-0");
  });
});

describe("values.schema.json", () => {
  it.each([
    ["gateway.replicas=0", "/gateway/replicas"],
    ["controller.replicas=0", "/controller/replicas"],
    ["watchNamespaces={Bad_NS}", "/watchNamespaces/0"],
    ["logLevel=verbose", "/logLevel"],
    ["gateway.port=70000", "/gateway/port"],
    ["replicas=2", "replicas"],
    ["grants.ttlSeconds=600", "/grants/ttlSeconds"],
    ["database.runtime.controller.url=mysql://x", "/database/runtime/controller/url"],
    ["database.runtime.gateway.secretName=Bad_Name", "/database/runtime/gateway/secretName"],
    ["database.migrate.backoffLimit=-1", "/database/migrate/backoffLimit"],
    ["gateway.limits.maxInFlight=0", "/gateway/limits/maxInFlight"],
    ["gateway.limits.modelRequestBytes=1024", "/gateway/limits/modelRequestBytes"],
    ["gateway.database.poolSize=1", "/gateway/database/poolSize"],
    ["gateway.database.poolSize=501", "/gateway/database/poolSize"],
    // external is gated by engines.externalImages, never by this list.
    ["engines.allowed={external}", "/engines/allowed/0"],
  ])("refuses --set %s and names %s", async (set, field) => {
    const result = await helm(["template", "gatehouse", CHART_DIR, "--set", set]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema");
    expect(result.stderr).toContain(field);
  });

  it("refuses a model endpoint without a baseURL", async () => {
    const result = await helm([
      "template",
      "gatehouse",
      CHART_DIR,
      "--set-json",
      'modelEndpoints=[{"name":"x","keySecretRef":{"name":"k","key":"apiKey"}}]',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("/modelEndpoints/0");
    expect(result.stderr).toContain("baseURL");
  });
});

describe("what the chart renders", () => {
  let defaults: Manifest[];
  beforeAll(async () => {
    defaults = await renderChart({ valuesFiles: ["charts/gatehouse/ci/default.yaml"] });
  });

  it("keeps the CRDs, admission policies and persona roles on uninstall, and nothing of the release", () => {
    for (const m of defaults) {
      const api =
        API_KINDS.has(m.kind) ||
        (m.kind === "ClusterRole" &&
          ["gatehouse-view", "gatehouse-session-user", "gatehouse-approver", "gatehouse-platform"].some(
            (persona) => m.metadata.name === persona,
          )) ||
        (m.kind === "ClusterRole" && m.metadata.name.startsWith("gatehouse-aggregate-")) ||
        (m.kind === "ClusterRole" && m.metadata.name === TRANSCRIPT_READER_ROLE) ||
        // Kept as the engine policy's binding that reads it: without it that binding refuses every session.
        (m.kind === "ConfigMap" && m.metadata.name === "gatehouse-engines");
      expect(m.metadata.annotations?.[KEEP], `${m.kind} ${m.metadata.name}`).toBe(api ? "keep" : undefined);
    }
    expect(find(defaults, "ValidatingAdmissionPolicy").length).toBeGreaterThanOrEqual(5);
    expect(find(defaults, "ClusterRole").map((r) => r.metadata.name)).toEqual(
      expect.arrayContaining([
        "gatehouse-view",
        "gatehouse-session-user",
        "gatehouse-approver",
        "gatehouse-platform",
      ]),
    );
  });

  it("registers the transcripts API: an APIService for the gateway pods' TLS port, with the CA of the certificate the gateway serves", () => {
    const apiService = one(defaults, "APIService", TRANSCRIPTS_API_SERVICE);
    const secret = one(defaults, "Secret", "gatehouse-transcripts-api-tls");
    const data = secret.data as Record<string, string>;
    expect(apiService.spec).toMatchObject({
      group: "transcripts.gatehouse.dev",
      version: "v1alpha1",
      service: { name: "gatehouse-transcripts-api", namespace: "gatehouse-system", port: 443 },
      caBundle: data["ca.crt"],
    });
    expect(one(defaults, "Service", "gatehouse-transcripts-api").spec).toMatchObject({
      selector: { "app.kubernetes.io/name": "gatehouse-gateway", "app.kubernetes.io/instance": "gatehouse" },
      ports: [{ name: "https", port: 443, targetPort: "transcripts-api", protocol: "TCP" }],
    });
    // Issued for the Service's DNS name, by the CA the API server is given.
    const cert = new X509Certificate(Buffer.from(data["tls.crt"] ?? "", "base64"));
    const ca = new X509Certificate(Buffer.from(data["ca.crt"] ?? "", "base64"));
    expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain("DNS:gatehouse-transcripts-api.gatehouse-system.svc");
    // The gateway mounts that Secret where its configuration points, and listens on the Service's target port.
    const pod = (deploymentOf(defaults, "gateway") as unknown as V1Deployment).spec!.template.spec!;
    const config = configFromEnvironment(resolvedEnv(deploymentOf(defaults, "gateway"), "postgres://x@y/z"));
    const mount = pod.containers[0]!.volumeMounts!.find((m) =>
      config.transcriptsApi.certFile?.startsWith(m.mountPath),
    );
    expect(pod.volumes!.find((v) => v.name === mount?.name)?.secret?.secretName).toBe(secret.metadata.name);
    expect(pod.containers[0]!.ports).toContainEqual(
      expect.objectContaining({ name: "transcripts-api", containerPort: config.transcriptsApi.port }),
    );
  });

  it("refuses a transcripts API port that is the gateway's agent port, naming both values", async () => {
    await resolveHelm();
    const result = await helm([
      ...templateArgs({ valuesFiles: ["charts/gatehouse/ci/default.yaml"] }),
      "--set",
      "gateway.port=8443",
      "--set",
      "gateway.transcriptsApi.port=8443",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("gateway.transcriptsApi.port: 8443 is gateway.port too");
  });

  it("refuses a serving certificate Secret of the platform's without the CA that signed it", async () => {
    await resolveHelm();
    const result = await helm([
      ...templateArgs({ valuesFiles: ["charts/gatehouse/ci/default.yaml"] }),
      "--set",
      "gateway.transcriptsApi.tls.secretName=transcripts-cert",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("gateway.transcriptsApi.tls.caBundle: set it to the PEM of the CA");
  });

  it("names the release's controller and gateway ServiceAccounts in the admission policies and bindings", async () => {
    const other = await renderChart({
      release: "gh",
      namespace: "agents-control",
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
    });
    const policies = JSON.stringify(find(other, "ValidatingAdmissionPolicy"));
    expect(policies).toContain("'system:serviceaccount:agents-control:gh-controller'");
    expect(policies).toContain("'system:serviceaccount:agents-control:gh-gateway'");
    expect(policies).not.toContain("gatehouse-system");
    expect(find(other, "ServiceAccount").map((sa) => sa.metadata)).toEqual([
      expect.objectContaining({ name: "gh-gateway", namespace: "agents-control" }),
      expect.objectContaining({ name: "gh-controller", namespace: "agents-control" }),
    ]);
    for (const component of ["gateway", "controller"]) {
      const binding = one(other, "ClusterRoleBinding", `gh-${component}`) as { subjects?: unknown };
      expect(binding.subjects).toEqual([
        { kind: "ServiceAccount", name: `gh-${component}`, namespace: "agents-control" },
      ]);
    }
    // The gateway is exempt from the Approval create rule only.
    const exempting = find(other, "ValidatingAdmissionPolicy")
      .filter((p) => JSON.stringify(p).includes("gh-gateway"))
      .map((p) => p.metadata.name);
    expect(exempting).toEqual(["gatehouse-approval-create"]);
  });

  it("lists the allowed engines in ConfigMap gatehouse-engines of the release namespace, where the engine policy's binding reads them", async () => {
    const engines = (manifests: Manifest[]) => one(manifests, "ConfigMap", "gatehouse-engines");
    // No external image by default: every spec.engine external session is refused.
    expect(engines(defaults).data).toEqual({ allowed: "builtin", externalImages: "" });
    const other = await renderChart({
      release: "gh",
      namespace: "agents-control",
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: {
        engines: { allowed: ["builtin", "pi"], externalImages: ["r.example/a@sha256:ab", "r.example/b:1"] },
      },
    });
    expect(engines(other).metadata).toMatchObject({ namespace: "agents-control" });
    expect(engines(other).metadata.annotations?.[KEEP]).toBe("keep");
    expect(engines(other).data).toEqual({
      allowed: "builtin,pi",
      externalImages: "r.example/a@sha256:ab,r.example/b:1",
    });
    const binding = one(other, "ValidatingAdmissionPolicyBinding", "gatehouse-agentsession-engine");
    expect(binding.spec).toMatchObject({
      policyName: "gatehouse-agentsession-engine",
      paramRef: { name: "gatehouse-engines", namespace: "agents-control", parameterNotFoundAction: "Deny" },
      validationActions: ["Deny"],
    });
  });

  it.each([
    ["replicaCount=3", "replicaCount moved", "gateway.replicas and controller.replicas"],
    ["serviceAccount.name=x", "serviceAccount moved", "gateway.serviceAccount and controller.serviceAccount"],
    ["resources.limits.cpu=2", "resources moved", "gateway.resources and controller.resources"],
    [
      "podDisruptionBudget.enabled=false",
      "podDisruptionBudget moved",
      "gateway.podDisruptionBudget and controller.podDisruptionBudget",
    ],
  ])(
    "refuses the moved value --set %s, naming its successors and docs/upgrading.md",
    async (set, what, successor) => {
      const result = await helm([
        "template",
        "gatehouse",
        CHART_DIR,
        "-f",
        join(CHART_DIR, "ci", "default.yaml"),
        "--set",
        set,
      ]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(what);
      expect(result.stderr).toContain(successor);
      expect(result.stderr).toContain("docs/upgrading.md");
    },
  );

  it("refuses to render without identity-binding namespaces (none listed and no watchNamespaces)", async () => {
    const result = await helm([
      "template",
      "gatehouse",
      CHART_DIR,
      "-f",
      join(CHART_DIR, "ci", "default.yaml"),
      "--set-json",
      "rbac.identityBindingNamespaces=[]",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("rbac.identityBindingNamespaces is required");
    expect(result.stderr).toContain("docs/upgrading.md");
    const scoped = await renderChart({
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: { "rbac.identityBindingNamespaces": [], watchNamespaces: ["team-a"] },
    });
    expect(
      find(scoped, "RoleBinding", "gatehouse-identity-bindings").map((b) => b.metadata.namespace),
    ).toEqual(["team-a"]);
  });

  it.each(["gateway", "controller"] as const)(
    "runs two hardened %s replicas with probes on the health server and resources",
    (component) => {
      const deployment = deploymentOf(defaults, component) as unknown as V1Deployment;
      expect(deployment.spec?.replicas).toBe(2);
      expect(deployment.spec?.template.spec?.serviceAccountName).toBe(`gatehouse-${component}`);
      expect(deployment.spec?.template.metadata?.labels?.["app.kubernetes.io/name"]).toBe(
        `gatehouse-${component}`,
      );
      const pod = deployment.spec!.template.spec!;
      const container = pod.containers[0]!;
      expect(container.image).toBe("gatehouse/operator:0.1.0");
      expect(container.args).toEqual([component]);
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(container.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      expect(container.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
      expect(pod.volumes).toContainEqual(
        expect.objectContaining({ name: "tmp", emptyDir: expect.any(Object) }),
      );
      expect(container.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "health" });
      expect(container.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "health" });
      expect(container.ports).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "health", containerPort: 8081 })]),
      );
      expect(container.resources?.requests && container.resources.limits).toBeTruthy();
    },
  );

  it("configures each component so that its own parser accepts it: gateway URL, leader election, its own runtime login", () => {
    const secrets = {
      "gatehouse-database-controller/url": "postgres://gatehouse_controller_login:p@db:5432/gatehouse",
      "gatehouse-database-gateway/url": "postgres://gatehouse_gateway_login:p@db:5432/gatehouse",
    };
    const controller = configFromEnvironment(resolvedEnv(deploymentOf(defaults, "controller"), secrets));
    const gateway = configFromEnvironment(resolvedEnv(deploymentOf(defaults, "gateway"), secrets));
    for (const config of [controller, gateway]) {
      expect(config.gatewayUrl).toBe("http://gatehouse-gateway.gatehouse-system.svc:8443");
      expect(config.operatorNamespace).toBe("gatehouse-system");
      expect(config.healthPort).toBe(8081);
      expect(config.failpoints.size).toBe(0);
    }
    expect(controller.databaseUrl).toBe("postgres://gatehouse_controller_login:p@db:5432/gatehouse");
    expect(gateway.databaseUrl).toBe("postgres://gatehouse_gateway_login:p@db:5432/gatehouse");
    // The chart's defaults are the program's: a value left out of the chart keeps the same limit.
    expect(gateway.gatewayLimits).toEqual(DEFAULT_GATEWAY_LIMITS);
    expect(gateway.gatewayPostgresPoolSize).toBe(DEFAULT_GATEWAY_POSTGRES_POOL_SIZE);
    expect(controller.leaderElection).toEqual({
      enabled: true,
      namespace: "gatehouse-system",
      identityPrefix: "gatehouse-operator-abc12",
    });
    expect(controller.agentImage).toBe("gatehouse/agent:0.1.0");
    expect(controller.watchNamespaces).toEqual([]);
    expect(controller.gatewayUsername).toBe("system:serviceaccount:gatehouse-system:gatehouse-gateway");
    const secretsRendered = Object.fromEntries(
      find(defaults, "Secret").map((s) => [
        s.metadata.name,
        (s as { stringData?: Record<string, string> }).stringData,
      ]),
    );
    expect(secretsRendered).toEqual({
      "gatehouse-database-controller": {
        url: "postgres://gatehouse_controller_login:secret@postgres.databases.svc:5432/gatehouse",
      },
      "gatehouse-database-gateway": {
        url: "postgres://gatehouse_gateway_login:secret@postgres.databases.svc:5432/gatehouse",
      },
      "gatehouse-migrate": {
        DATABASE_OWNER_URL: "postgres://gatehouse:secret@postgres.databases.svc:5432/gatehouse",
        CONTROLLER_DATABASE_URL:
          "postgres://gatehouse_controller_login:secret@postgres.databases.svc:5432/gatehouse",
        GATEWAY_DATABASE_URL:
          "postgres://gatehouse_gateway_login:secret@postgres.databases.svc:5432/gatehouse",
      },
    });
  });

  it("tells the controller its watched namespaces, and gives it pod rights only there", async () => {
    const external = await renderChart({ valuesFiles: ["charts/gatehouse/ci/external-database.yaml"] });
    const env = resolvedEnv(deploymentOf(external, "controller"), "postgres://x@y/z");
    expect(configFromEnvironment(env).watchNamespaces).toEqual(["plant-a", "plant-b"]);
    const pods = find(external, "RoleBinding", "gatehouse-controller-pods") as unknown as Array<{
      metadata: { namespace: string };
      roleRef: unknown;
      subjects: unknown;
    }>;
    expect(pods.map((b) => b.metadata.namespace)).toEqual(["plant-a", "plant-b"]);
    for (const b of pods) {
      expect(b.roleRef).toEqual({
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "gatehouse-controller-pods",
      });
      expect(b.subjects).toEqual([
        { kind: "ServiceAccount", name: "gatehouse-controller", namespace: "gatehouse-system" },
      ]);
    }
    expect(find(external, "ClusterRoleBinding", "gatehouse-controller-pods")).toEqual([]);
    expect(rulesOf(one(external, "ClusterRole", "gatehouse-controller-pods"))).toEqual([CONTROLLER_POD_RULE]);
    // Without watchNamespaces: every namespace.
    expect(find(defaults, "RoleBinding", "gatehouse-controller-pods")).toEqual([]);
    one(defaults, "ClusterRoleBinding", "gatehouse-controller-pods");
  });

  it("tells both components the watched namespaces, and lets both read pods and EndpointSlices only there", async () => {
    const external = await renderChart({ valuesFiles: ["charts/gatehouse/ci/external-database.yaml"] });
    for (const component of ["gateway", "controller"] as const) {
      const env = resolvedEnv(deploymentOf(external, component), "postgres://x@y/z");
      expect(configFromEnvironment(env).watchNamespaces, component).toEqual(["plant-a", "plant-b"]);
    }
    const readers = find(external, "RoleBinding", "gatehouse-pod-reader") as unknown as Array<{
      metadata: { namespace: string };
      roleRef: unknown;
      subjects: unknown;
    }>;
    expect(readers.map((b) => b.metadata.namespace)).toEqual(["plant-a", "plant-b"]);
    for (const b of readers) {
      expect(b.roleRef).toEqual({
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "gatehouse-pod-reader",
      });
      expect(b.subjects).toEqual([
        { kind: "ServiceAccount", name: "gatehouse-gateway", namespace: "gatehouse-system" },
        { kind: "ServiceAccount", name: "gatehouse-controller", namespace: "gatehouse-system" },
      ]);
    }
    expect(find(external, "ClusterRoleBinding", "gatehouse-pod-reader")).toEqual([]);
    expect(rulesOf(one(external, "ClusterRole", "gatehouse-pod-reader"))).toEqual(POD_READER_RULES);
    // Neither component's own ClusterRole reads pods or EndpointSlices anywhere.
    for (const component of ["gateway", "controller"]) {
      const resources = rulesOf(one(external, "ClusterRole", `gatehouse-${component}`)).flatMap(
        (r) => r.resources,
      );
      expect(
        resources.filter((r) => r === "pods" || r === "endpointslices"),
        component,
      ).toEqual([]);
    }
    // Without watchNamespaces: every namespace.
    expect(find(defaults, "RoleBinding", "gatehouse-pod-reader")).toEqual([]);
    one(defaults, "ClusterRoleBinding", "gatehouse-pod-reader");
  });

  it.each(
    CI_FILES.flatMap((file) => [
      [file, "gateway"],
      [file, "controller"],
    ]),
  )(
    "gives the component pods no owner URL: with ci/%s the %s's env names no owner Secret or value",
    async (file, component) => {
      const manifests = await renderChart({ valuesFiles: [`charts/gatehouse/ci/${file}`] });
      const container = (
        deploymentOf(manifests, component as "gateway" | "controller") as unknown as V1Deployment
      ).spec!.template.spec!.containers[0]!;
      const ownerSecrets = new Set([
        "gatehouse-database",
        "gatehouse-migrate",
        "prod-postgres",
        "gatehouse-postgres",
      ]);
      for (const v of container.env ?? []) {
        expect(ownerSecrets.has(v.valueFrom?.secretKeyRef?.name ?? ""), `env ${v.name}`).toBe(false);
        expect(v.value ?? "").not.toContain("postgres://gatehouse:secret@");
      }
      expect(container.envFrom).toBeUndefined();
      const names = (container.env ?? []).map((v) => v.name);
      expect(names.filter((n) => /DATABASE/.test(n))).toEqual(["DATABASE_URL"]);
    },
  );

  it("runs the migrate program as a pre-install/pre-upgrade hook Job with the owner's URL and both runtime logins", () => {
    const job = one(defaults, "Job", "gatehouse-migrate") as unknown as V1Job;
    expect(job.metadata?.annotations).toEqual({
      "helm.sh/hook": "pre-install,pre-upgrade",
      "helm.sh/hook-weight": "0",
      "helm.sh/hook-delete-policy": "before-hook-creation",
    });
    const pod = job.spec!.template.spec!;
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.automountServiceAccountToken).toBe(false);
    const container = pod.containers[0]!;
    expect(container.image).toBe("gatehouse/operator:0.1.0");
    expect(container.command).toBeUndefined();
    expect(container.args).toEqual(["migrate"]);
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    const env = resolvedEnv(job as unknown as Manifest, {
      "gatehouse-migrate/DATABASE_OWNER_URL": "postgres://owner@db/g",
      "gatehouse-migrate/CONTROLLER_DATABASE_URL": "postgres://c@db/g",
      "gatehouse-migrate/GATEWAY_DATABASE_URL": "postgres://gw@db/g",
    });
    expect(env).toEqual({
      DATABASE_OWNER_URL: "postgres://owner@db/g",
      CONTROLLER_DATABASE_URL: "postgres://c@db/g",
      GATEWAY_DATABASE_URL: "postgres://gw@db/g",
    });
    // Not the operator's selector labels: no Service, PodDisruptionBudget or NetworkPolicy of it selects the Job's pod.
    expect(job.spec!.template.metadata?.labels?.["app.kubernetes.io/name"]).toBe("gatehouse-migrate");
    const hookSecret = one(defaults, "Secret", "gatehouse-migrate");
    expect(hookSecret.metadata.annotations).toEqual({
      "helm.sh/hook": "pre-install,pre-upgrade",
      "helm.sh/hook-weight": "-10",
      "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded,hook-failed",
    });
  });

  it("reads the runtime login and the owner's URL from the Secrets of your own that the values name, and creates no Secret then", async () => {
    const external = await renderChart({ valuesFiles: ["charts/gatehouse/ci/external-database.yaml"] });
    const secrets = {
      "prod-postgres/DATABASE_OWNER_URL": "postgres://owner@db/gatehouse",
      "prod-postgres-controller/DATABASE_URL": "postgres://gatehouse_controller_login@db/gatehouse",
      "prod-postgres-gateway/DATABASE_URL": "postgres://gatehouse_gateway_login@db/gatehouse",
    };
    const env = resolvedEnv(deploymentOf(external, "controller"), secrets);
    expect(configFromEnvironment(env).databaseUrl).toBe("postgres://gatehouse_controller_login@db/gatehouse");
    const gatewayEnv = resolvedEnv(deploymentOf(external, "gateway"), secrets);
    expect(configFromEnvironment(gatewayEnv).databaseUrl).toBe(
      "postgres://gatehouse_gateway_login@db/gatehouse",
    );
    const jobEnv = resolvedEnv(one(external, "Job", "gatehouse-migrate"), secrets);
    expect(jobEnv).toEqual({
      DATABASE_OWNER_URL: "postgres://owner@db/gatehouse",
      CONTROLLER_DATABASE_URL: "postgres://gatehouse_controller_login@db/gatehouse",
      GATEWAY_DATABASE_URL: "postgres://gatehouse_gateway_login@db/gatehouse",
    });
    // None of the database's: the transcripts API's serving certificate is the only Secret it makes.
    expect(find(external, "Secret").map((m) => m.metadata.name)).toEqual(["gatehouse-transcripts-api-tls"]);
  });

  it("passes gateway.database.poolSize to the gateway's pool setting, and sets it on the gateway alone", async () => {
    const sized = await renderChart({
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: { "gateway.database.poolSize": 32 },
    });
    const gateway = configFromEnvironment(resolvedEnv(deploymentOf(sized, "gateway"), "postgres://x@y/z"));
    expect(gateway.gatewayPostgresPoolSize).toBe(32);
    const controllerEnv = resolvedEnv(deploymentOf(sized, "controller"), "postgres://x@y/z");
    expect(controllerEnv.GATEWAY_POSTGRES_POOL_SIZE).toBeUndefined();
  });

  it("passes model endpoints, ceilings and the approval floor through to the operator", async () => {
    const ha = await renderChart({ valuesFiles: ["charts/gatehouse/ci/ha-with-servicemonitor.yaml"] });
    const config = configFromEnvironment(resolvedEnv(deploymentOf(ha, "gateway"), "postgres://x@y/z"));
    expect(config.modelEndpoints).toEqual([
      {
        name: "openai",
        baseURL: "https://api.openai.com/v1",
        keySecretRef: { name: "gatehouse-openai-key", key: "apiKey" },
        models: ["gpt-4.1-mini"],
        default: true,
        contextWindow: 1047576,
      },
    ]);
    expect(config.sessionCeilings).toMatchObject({ maxTurns: 20, timeoutSeconds: 1800 });
    expect(config.execution.approvalFloor).toEqual({ write: "Required" });
    expect((deploymentOf(ha, "gateway") as unknown as V1Deployment).spec?.replicas).toBe(3);
    expect((deploymentOf(ha, "controller") as unknown as V1Deployment).spec?.replicas).toBe(2);
    const monitor = one(ha, "ServiceMonitor") as {
      spec?: {
        selector?: { matchLabels?: Record<string, string> };
        endpoints?: Array<{ port: string; path: string }>;
      };
    };
    expect(monitor.spec?.endpoints?.[0]).toMatchObject({ port: "metrics", path: "/metrics" });
    // One ServiceMonitor selects both components' metrics Services.
    const selected = find(ha, "Service").filter((svc) =>
      Object.entries(monitor.spec?.selector?.matchLabels ?? {}).every(
        ([k, v]) => (svc.metadata as { labels?: Record<string, string> }).labels?.[k] === v,
      ),
    );
    expect(selected.map((svc) => svc.metadata.name)).toEqual([
      "gatehouse-gateway-metrics",
      "gatehouse-controller-metrics",
    ]);
    expect(find(defaults, "ServiceMonitor")).toEqual([]);
  });

  it("gives each component exactly the generated rules: ClusterRole, its Role and only the model key Secrets named, to the gateway", async () => {
    expect(rulesOf(one(defaults, "ClusterRole", "gatehouse-gateway"))).toEqual(GATEWAY_RULES);
    expect(rulesOf(one(defaults, "ClusterRole", "gatehouse-controller"))).toEqual(CONTROLLER_RULES);
    expect(rulesOf(one(defaults, "Role", "gatehouse-gateway"))).toEqual(gatewayRoleRules([]));
    expect(rulesOf(one(defaults, "Role", "gatehouse-controller"))).toEqual(controllerRoleRules());
    expect(find(defaults, "Role", "gatehouse-gateway-model-keys")).toEqual([]);
    const external = await renderChart({ valuesFiles: ["charts/gatehouse/ci/external-database.yaml"] });
    expect(one(external, "Role", "gatehouse-controller").metadata.namespace).toBe("gatehouse-leases");
    expect(one(external, "Role", "gatehouse-gateway").metadata.namespace).toBe("gatehouse-leases");
    const keys = one(external, "Role", "gatehouse-gateway-model-keys");
    expect(keys.metadata.namespace).toBe("gatehouse-system");
    expect(rulesOf(keys)).toEqual([modelKeyRule(["internal-llm-key"])]);
    const keysBinding = one(external, "RoleBinding", "gatehouse-gateway-model-keys") as {
      subjects?: unknown;
    };
    expect(keysBinding.subjects).toEqual([
      { kind: "ServiceAccount", name: "gatehouse-gateway", namespace: "gatehouse-system" },
    ]);
  });

  it("lists identity-binding Secrets only in the provider namespaces the values name, for the controller alone", async () => {
    for (const rules of [GATEWAY_RULES, CONTROLLER_RULES]) {
      expect(rules.some((r) => r.resources.includes("secrets"))).toBe(false);
    }
    expect(rulesOf(one(defaults, "ClusterRole", "gatehouse-identity-bindings"))).toEqual([
      IDENTITY_BINDING_RULE,
    ]);
    const external = await renderChart({ valuesFiles: ["charts/gatehouse/ci/external-database.yaml"] });
    const bindings = find(external, "RoleBinding", "gatehouse-identity-bindings") as unknown as Array<{
      metadata: { namespace: string };
      subjects: unknown;
    }>;
    expect(bindings.map((b) => b.metadata.namespace)).toEqual(["plant-a", "plant-b"]);
    for (const b of bindings) {
      expect(b.subjects).toEqual([
        { kind: "ServiceAccount", name: "gatehouse-controller", namespace: "gatehouse-system" },
      ]);
    }
  });

  it("gives both components the heap flags of their nodeOptions in NODE_OPTIONS, which the test bed starts its programs with, and none when emptied", async () => {
    for (const component of ["gateway", "controller"] as const) {
      const env = resolvedEnv(deploymentOf(defaults, component), "postgres://x:p@db/g");
      expect(env.NODE_OPTIONS).toBe("--max-semi-space-size=2");
      // The test bed's: the chart's flags, then the old space node derives from the chart's memory limit.
      expect(chartNodeOptions(component).startsWith(`${env.NODE_OPTIONS} `)).toBe(true);
    }
    const emptied = await renderChart({
      valuesFiles: ["charts/gatehouse/ci/default.yaml"],
      setJson: { "gateway.nodeOptions": "", "controller.nodeOptions": "" },
    });
    for (const component of ["gateway", "controller"] as const) {
      expect(
        resolvedEnv(deploymentOf(emptied, component), "postgres://x:p@db/g").NODE_OPTIONS,
      ).toBeUndefined();
    }
  });

  it("caps both components' glibc malloc arenas with MALLOC_ARENA_MAX, as the test bed's benchmarks do, and leaves glibc's default when 0 or null", async () => {
    for (const component of ["gateway", "controller"] as const) {
      const env = resolvedEnv(deploymentOf(defaults, component), "postgres://x:p@db/g");
      expect(env.MALLOC_ARENA_MAX).toBe("2");
      expect(chartComponentEnv(component).MALLOC_ARENA_MAX).toBe(env.MALLOC_ARENA_MAX);
    }
    for (const unset of [0, null]) {
      const rendered = await renderChart({
        valuesFiles: ["charts/gatehouse/ci/default.yaml"],
        setJson: { "gateway.mallocArenaMax": unset, "controller.mallocArenaMax": unset },
      });
      for (const component of ["gateway", "controller"] as const) {
        expect(
          resolvedEnv(deploymentOf(rendered, component), "postgres://x:p@db/g").MALLOC_ARENA_MAX,
        ).toBeUndefined();
      }
    }
  });

  it("exposes the gateway as <release>-gateway and keeps one replica through voluntary disruptions", () => {
    const service = one(defaults, "Service", "gatehouse-gateway") as {
      spec?: { ports?: unknown[]; selector?: unknown };
    };
    expect(service.spec?.ports).toEqual([
      { name: "gateway", port: 8443, targetPort: "gateway", protocol: "TCP" },
    ]);
    expect(service.spec?.selector).toEqual({
      "app.kubernetes.io/name": "gatehouse-gateway",
      "app.kubernetes.io/instance": "gatehouse",
    });
    const pdb = one(defaults, "PodDisruptionBudget", "gatehouse-gateway") as {
      spec?: Record<string, unknown>;
    };
    expect(pdb.spec).toMatchObject({ maxUnavailable: 1, selector: { matchLabels: service.spec?.selector } });
    const controllerPdb = one(defaults, "PodDisruptionBudget", "gatehouse-controller") as {
      spec?: Record<string, unknown>;
    };
    expect(controllerPdb.spec).toMatchObject({
      maxUnavailable: 1,
      selector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-controller" } },
    });
  });

  it("lets the gateway's pods be reached only on the gateway port (agents, providers), the transcripts API port (the API server) and the health port, the controller's only on the health port", () => {
    const controller = one(defaults, "NetworkPolicy", "gatehouse-controller") as unknown as {
      spec: { podSelector: unknown; policyTypes: string[]; ingress: unknown[] };
    };
    expect(controller.spec.podSelector).toEqual({
      matchLabels: {
        "app.kubernetes.io/name": "gatehouse-controller",
        "app.kubernetes.io/instance": "gatehouse",
      },
    });
    expect(controller.spec.ingress).toEqual([{ ports: [{ protocol: "TCP", port: "health" }] }]);
    const policy = one(defaults, "NetworkPolicy", "gatehouse-gateway") as unknown as {
      spec: { policyTypes: string[]; ingress: Array<{ from?: unknown[]; ports: unknown[] }> };
    };
    expect(policy.spec.policyTypes).toEqual(["Ingress"]);
    expect(policy.spec.ingress).toEqual([
      {
        from: [
          {
            namespaceSelector: {},
            podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-agent" } },
          },
          {
            namespaceSelector: {},
            podSelector: { matchLabels: { "app.kubernetes.io/name": "gatehouse-provider" } },
          },
        ],
        ports: [{ protocol: "TCP", port: "gateway" }],
      },
      // From anywhere: the API server is no pod; only its front proxy's certificate is answered.
      { ports: [{ protocol: "TCP", port: "transcripts-api" }] },
      { ports: [{ protocol: "TCP", port: "health" }] },
    ]);
  });

  it("lays down the same agent NetworkPolicy the controller applies in each listed session namespace", async () => {
    const offClusterGateways = [{ cidr: "10.88.0.1/32", port: 34_567 }];
    const external = await renderChart({
      valuesFiles: ["charts/gatehouse/ci/external-database.yaml"],
      setJson: { "gateway.port": 8443, "networkPolicy.offClusterGateways": offClusterGateways },
    });
    const agents = find(external, "NetworkPolicy", "gatehouse-agent");
    expect(agents.map((p) => p.metadata.namespace)).toEqual(["plant-a", "plant-b"]);
    // The controller is told the same off-cluster gateways, so the policy it applies is this one too.
    const controller = configFromEnvironment(
      resolvedEnv(deploymentOf(external, "controller"), {
        "prod-postgres-controller/DATABASE_URL": "postgres://gatehouse_controller_login:p@db:5432/gatehouse",
      }),
    );
    expect(controller.offClusterGateways).toEqual(offClusterGateways);
    // The client library names NetworkPolicyIngressRule.from `_from`; the wire name is `from`.
    const wire = JSON.stringify(agentNetworkPolicy("plant-a", controller)).replaceAll('"_from":', '"from":');
    const expected = JSON.parse(wire) as Manifest;
    expect(agents[0]!.spec).toEqual(expected.spec);
  });

  it("refuses an off-cluster gateway without an address block or with a port out of range", async () => {
    for (const bad of [
      [{ port: 8443 }],
      [{ cidr: "10.0.0.5/32", port: 0 }],
      [{ cidr: "gateway", port: 8443 }],
    ]) {
      await expect(
        renderChart({
          valuesFiles: ["charts/gatehouse/ci/external-database.yaml"],
          setJson: { "networkPolicy.offClusterGateways": bad },
        }),
      ).rejects.toThrow(/offClusterGateways/);
    }
  });
});
