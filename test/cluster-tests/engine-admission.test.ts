/**
 * Which engines sessions may use is the installation's choice, and the API server enforces it
 * (api/admission-engine.ts): spec.engine's schema lists the engines the agent image carries, admission
 * policy gatehouse-agentsession-engine narrows them to ConfigMap gatehouse-system/gatehouse-engines
 * (deploy/engines.yaml here, the chart's engines.allowed in a release). Each case sets the list, and
 * the end puts deploy/'s back. The API server reads the ConfigMap through its own informer, so every
 * expectation after a change waits for it.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ENGINES_ALLOWED_KEY,
  ENGINES_CONFIGMAP,
  enginesConfigMap,
} from "../../operator/src/api/admission-engine.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { type Kubectl, type KubectlResult, kubectlFor } from "../e2e/kubectl.ts";
import { eventually } from "../e2e/story.ts";
import {
  expectRefused,
  installApi,
  manifest,
  personaNamespace,
  sessionSpec,
  uniqueName,
} from "./api-fixtures.ts";

const cluster = inject("cluster");
const kubectl: Kubectl = kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath);
let ns: string;

const REFUSED_PI =
  /session-engine: spec\.engine pi is not allowed in this installation; allowed: builtin\. A platform engineer allows an engine with the chart value engines\.allowed \(ConfigMap gatehouse-system\/gatehouse-engines\)/;

beforeAll(async () => {
  await installApi(kubectl);
  ns = await personaNamespace(kubectl, "engines");
}, 120_000);

afterAll(async () => {
  // deploy/engines.yaml's list again, for the files after this one.
  await installApi(kubectl);
  await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
});

/** The engines ConfigMap in the operator's namespace lists `allowed` (as the chart renders it). */
async function allow(allowed: string): Promise<void> {
  await kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify(enginesConfigMap(OPERATOR_NAMESPACE, allowed)),
  );
}

/** alice creates a session asking for `engine` (none: the field is left out). */
function create(engine?: string, user = "alice"): Promise<KubectlResult> {
  const spec = sessionSpec(user, engine === undefined ? {} : { engine });
  return kubectl.run(user, ["create", "-f", "-"], manifest("AgentSession", ns, uniqueName("eng"), spec));
}

/** Retries `create(engine)` until its outcome is `wanted` (the API server's informer catches up). */
async function settlesTo(engine: string | undefined, wanted: "admitted" | "refused"): Promise<KubectlResult> {
  return eventually(`a ${engine ?? "default"} session to be ${wanted}`, 30_000, async () => {
    const result = await create(engine);
    return (result.code === 0) === (wanted === "admitted") ? result : undefined;
  });
}

describe("spec.engine at admission", () => {
  it("refuses pi while the ConfigMap allows only builtin, naming the field, the allowed engines and the chart value; builtin is admitted", async () => {
    await allow("builtin");
    expectRefused(await settlesTo("pi", "refused"), REFUSED_PI);
    expect((await create("builtin")).code).toBe(0);
    // Left out, spec.engine is defaulted to builtin before admission: admitted as builtin.
    expect((await create(undefined)).code).toBe(0);
  });

  it("admits pi once the ConfigMap lists it", async () => {
    await allow("builtin, pi");
    const admitted = await settlesTo("pi", "admitted");
    const name = /agentsession\.gatehouse\.dev\/(\S+) created/.exec(admitted.stdout)?.[1];
    const engine = await kubectl.ok("admin", [
      "get",
      "ags",
      name ?? "",
      "-n",
      ns,
      "-o",
      "jsonpath={.spec.engine}",
    ]);
    expect(engine.stdout).toBe("pi");
  });

  it("refuses a session that leaves spec.engine out when builtin is not listed: the default is checked too", async () => {
    await allow("pi");
    expectRefused(
      await settlesTo(undefined, "refused"),
      /spec\.engine builtin is not allowed in this installation; allowed: pi\./,
    );
  });

  it("admits codex once listed, and refuses an engine the agent image does not carry at the schema, whatever the ConfigMap lists", async () => {
    await allow("builtin,pi,codex,no-such-engine");
    await settlesTo("pi", "admitted");
    expect((await create("codex")).code).toBe(0);
    const refused = expectRefused(
      await create("no-such-engine"),
      /spec\.engine: Unsupported value: "no-such-engine"/,
    );
    expect(refused).toContain('supported values: "builtin", "pi", "codex"');
  });
});

describe("getting around the engine list", () => {
  it("a ConfigMap of the same name in the session's namespace allows nothing: the list is read in the operator's namespace only", async () => {
    await allow("builtin");
    await kubectl.ok("admin", ["apply", "-f", "-"], JSON.stringify(enginesConfigMap(ns, "builtin,pi")));
    expectRefused(await settlesTo("pi", "refused"), REFUSED_PI);
  });

  it("a session user may not change the list", async () => {
    const patch = JSON.stringify({ data: { [ENGINES_ALLOWED_KEY]: "builtin,pi" } });
    for (const user of ["alice", "bob"]) {
      const result = await kubectl.run(user, [
        "patch",
        "configmap",
        ENGINES_CONFIGMAP,
        "-n",
        OPERATOR_NAMESPACE,
        "--type",
        "merge",
        "-p",
        patch,
      ]);
      expectRefused(result, /forbidden/i);
    }
  });

  it("a session admitted as builtin cannot be switched to pi afterwards: spec.engine is immutable", async () => {
    await allow("builtin");
    const admitted = await settlesTo("builtin", "admitted");
    const name = /agentsession\.gatehouse\.dev\/(\S+) created/.exec(admitted.stdout)?.[1] ?? "";
    const result = await kubectl.run("alice", [
      "patch",
      "ags",
      name,
      "-n",
      ns,
      "--type",
      "merge",
      "-p",
      '{"spec":{"engine":"pi"}}',
    ]);
    expectRefused(result, /spec\.engine is immutable/);
  });

  it("without the ConfigMap no session is created, builtin included: the policy fails closed", async () => {
    await kubectl.ok("admin", ["delete", "configmap", ENGINES_CONFIGMAP, "-n", OPERATOR_NAMESPACE]);
    try {
      const refused = await settlesTo("builtin", "refused");
      expectRefused(refused, /gatehouse-agentsession-engine.*(no params found|not found)/);
      expectRefused(await create("pi"), /gatehouse-agentsession-engine/);
    } finally {
      await installApi(kubectl);
    }
    await settlesTo("builtin", "admitted");
  });
});
