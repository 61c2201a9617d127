/**
 * A session with spec.engine external runs the image it names (spec.agent.image), so the API server
 * gates it by image (api/admission-engine.ts): the schema requires spec.agent with external and forbids
 * it otherwise (api/validation-rules.ts), and admission policy gatehouse-agentsession-engine admits only
 * an image that ConfigMap gatehouse-system/gatehouse-engines lists under externalImages, exactly. Each
 * case sets the list as the attacker would find it; the end puts deploy/'s back. The API server reads
 * the ConfigMap through its own informer, so every expectation after a change waits for it.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ENGINES_CONFIGMAP,
  EXTERNAL_IMAGES_KEY,
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

const LISTED =
  "registry.example/agents/mcp-agent@sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER = "registry.example/agents/other-agent:1.0";

beforeAll(async () => {
  await installApi(kubectl);
  ns = await personaNamespace(kubectl, "external");
}, 120_000);

afterAll(async () => {
  // deploy/engines.yaml's lists again, for the files after this one.
  await installApi(kubectl);
  await kubectl.run("admin", ["delete", "namespace", ns, "--wait=false"]);
});

/** The engines ConfigMap in the operator's namespace allows builtin and lists `images` for external. */
async function allowImages(images: string, namespace = OPERATOR_NAMESPACE): Promise<void> {
  await kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify(enginesConfigMap(namespace, "builtin", images)),
  );
}

/** alice creates a session with `spec` merged into a valid one. */
function create(spec: Record<string, unknown>, user = "alice"): Promise<KubectlResult> {
  return kubectl.run(
    user,
    ["create", "-f", "-"],
    manifest("AgentSession", ns, uniqueName("ext"), sessionSpec(user, spec)),
  );
}

const external = (image: string) => ({ engine: "external", agent: { image } });

/** Retries creating an external session of `image` until its outcome is `wanted` (the informer catches up). */
function settlesTo(image: string, wanted: "admitted" | "refused"): Promise<KubectlResult> {
  return eventually(`an external session of ${image} to be ${wanted}`, 30_000, async () => {
    const result = await create(external(image));
    return (result.code === 0) === (wanted === "admitted") ? result : undefined;
  });
}

const nameOf = (result: KubectlResult) =>
  /agentsession\.gatehouse\.dev\/(\S+) created/.exec(result.stdout)?.[1] ?? "";

function refusedImage(image: string, allowed: string): RegExp {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(
    `session-engine: spec\\.agent\\.image ${literal(image)} is not allowed in this installation; allowed: ${literal(allowed)}\\. A platform engineer allows an agent image with the chart value engines\\.externalImages \\(ConfigMap gatehouse-system/gatehouse-engines\\)`,
  );
}

describe("spec.engine external at the schema", () => {
  it("refuses external without spec.agent, naming the field and where the allowed images come from", async () => {
    const refused = expectRefused(
      await create({ engine: "external" }),
      /spec\.agent\.image is required with spec\.engine external: name one of the images the installation allows \(chart value engines\.externalImages\)/,
    );
    expect(refused).toContain("spec.agent");
  });

  it("refuses spec.agent with builtin, pi, codex and with spec.engine left out: only external runs an image of its own", async () => {
    await allowImages(LISTED);
    for (const engine of ["builtin", "pi", "codex", undefined]) {
      const spec = { agent: { image: LISTED }, ...(engine ? { engine } : {}) };
      expectRefused(
        await create(spec),
        /spec\.agent is forbidden unless spec\.engine is external: .*remove spec\.agent, or set spec\.engine: external/,
      );
    }
  });

  it("refuses an empty image and one with whitespace at the schema, whatever the ConfigMap lists", async () => {
    expectRefused(await create(external("")), /spec\.agent\.image/);
    expectRefused(await create(external(`${LISTED} `)), /spec\.agent\.image/);
  });
});

describe("spec.agent.image at admission", () => {
  it("refuses every external session while the list is empty (the chart's default), naming none allowed", async () => {
    await allowImages("");
    expectRefused(await settlesTo(LISTED, "refused"), refusedImage(LISTED, "none"));
  });

  it("admits a listed image, stored as asked, and refuses an unlisted one naming the list", async () => {
    await allowImages(LISTED);
    const admitted = await settlesTo(LISTED, "admitted");
    const stored = await kubectl.ok("admin", [
      "get",
      "ags",
      nameOf(admitted),
      "-n",
      ns,
      "-o",
      "jsonpath={.spec.engine} {.spec.agent.image}",
    ]);
    expect(stored.stdout).toBe(`external ${LISTED}`);
    expectRefused(await create(external(OTHER)), refusedImage(OTHER, LISTED));
  });

  it("matches exactly: the same repository by tag, without the digest, a prefix or a comma-joined list is refused", async () => {
    await allowImages(`${LISTED},${OTHER}`);
    await settlesTo(LISTED, "admitted");
    const repository = LISTED.split("@")[0] ?? "";
    for (const image of [
      repository,
      `${repository}:latest`,
      `${LISTED}0`,
      "registry.example/agents/other-agent",
      `${OTHER},${LISTED}`,
      "REGISTRY.EXAMPLE/agents/other-agent:1.0",
    ]) {
      expectRefused(
        await create(external(image)),
        /spec\.agent\.image .* is not allowed in this installation/,
      );
    }
  });

  it("the list gates creation: an image listed only after a refusal needs a new session, and delisting it leaves admitted sessions be", async () => {
    await allowImages(LISTED);
    const refused = expectRefused(await settlesTo(OTHER, "refused"), refusedImage(OTHER, LISTED));
    expect(refused).not.toContain("created");
    await allowImages(`${LISTED},${OTHER}`);
    const admitted = await settlesTo(OTHER, "admitted");
    await allowImages(LISTED);
    await settlesTo(OTHER, "refused");
    // The admitted session stays, and its subject still appends messages (CREATE only).
    const appended = await kubectl.run("alice", [
      "patch",
      "ags",
      nameOf(admitted),
      "-n",
      ns,
      "--type",
      "json",
      "-p",
      '[{"op":"add","path":"/spec/messages/-","value":{"text":"And tell me when."}}]',
    ]);
    expect(appended.code, appended.stderr).toBe(0);
  });
});

describe("getting around the image list", () => {
  it("an admitted session's image cannot be swapped for another, nor its engine switched: both are immutable", async () => {
    await allowImages(`${LISTED},${OTHER}`);
    const name = nameOf(await settlesTo(LISTED, "admitted"));
    const patch = (body: string) =>
      kubectl.run("alice", ["patch", "ags", name, "-n", ns, "--type", "merge", "-p", body]);
    expectRefused(
      await patch(JSON.stringify({ spec: { agent: { image: OTHER } } })),
      /spec\.agent is immutable/,
    );
    expectRefused(
      await patch(JSON.stringify({ spec: { engine: "builtin", agent: null } })),
      /spec\.engine is immutable/,
    );
  });

  it("a builtin session cannot gain an image afterwards", async () => {
    await allowImages(LISTED);
    const created = await create({ engine: "builtin" });
    expect(created.code, created.stderr).toBe(0);
    const result = await kubectl.run("alice", [
      "patch",
      "ags",
      nameOf(created),
      "-n",
      ns,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { engine: "external", agent: { image: LISTED } } }),
    ]);
    expectRefused(result, /spec\.(engine|agent) is immutable/);
  });

  it("a ConfigMap of the same name in the session's namespace lists nothing: the list is read in the operator's namespace only", async () => {
    await allowImages(LISTED);
    await allowImages(`${LISTED},${OTHER}`, ns);
    expectRefused(await settlesTo(OTHER, "refused"), refusedImage(OTHER, LISTED));
  });

  it("a user who may create sessions may not add an image to the list", async () => {
    const patch = JSON.stringify({ data: { [EXTERNAL_IMAGES_KEY]: OTHER } });
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
});
