/**
 * examples/ on the real control plane and local node with the operator running: what the
 * platform repo syncs for plant-a (examples/gitops/overlays/plant-a on the shared base) applies cleanly, every Capability it declares becomes Ready with what
 * the aps provider offers, and every sample session is admitted when its subject creates it. What the
 * identity bindings decide in the business system — bob approves his own publish, the APS refuses his
 * account, and `forbidden` is the final word (DESIGN §1 step 6) — is part of the reference story
 * (reference-story.test.ts), which plays bob's sample session.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { clusterInfo } from "./cluster-info.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { applyExamples, EXAMPLE_SESSIONS_DIR, renderExamples } from "./examples.ts";
import { eventually } from "./story.ts";

interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; generateName?: string; namespace?: string };
  spec?: { id?: string; subject?: { user: string } };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
}

let env: Environment;
let rendered: ManifestObject[];

beforeAll(async () => {
  env = await startEnvironment(clusterInfo());
  rendered = parseAllDocuments(await renderExamples(env.kubectl, env.aps.url)).map(
    (document) => document.toJS() as ManifestObject,
  );
}, 600_000);

afterAll(async () => {
  await env?.stop();
});

const ofKind = (kind: string) => rendered.filter((object) => object.kind === kind);

/** The sample sessions: the AgentSession files of examples/plant-a, which no overlay syncs. */
function sampleSessions(): Array<{ file: string; session: ManifestObject }> {
  return readdirSync(EXAMPLE_SESSIONS_DIR)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => ({
      file,
      session: parseAllDocuments(readFileSync(join(EXAMPLE_SESSIONS_DIR, file), "utf8")),
    }))
    .flatMap(({ file, session }) =>
      session.map((document) => ({ file, session: document.toJS() as ManifestObject })),
    )
    .filter(({ session }) => session?.kind === "AgentSession");
}

describe("the plant-a overlay of examples/gitops as the platform repo keeps it", () => {
  it("holds the namespace, persona RoleBindings, the aps provider, identity bindings and Capabilities", () => {
    expect(ofKind("Namespace").map((o) => o.metadata.name)).toEqual([NAMESPACE]);
    expect(ofKind("RoleBinding").map((o) => o.metadata.name)).toEqual(
      expect.arrayContaining(["gatehouse-session-users", "gatehouse-approvers"]),
    );
    expect(ofKind("ProviderInstance").map((o) => o.metadata.name)).toEqual(["aps"]);
    expect(ofKind("Secret")).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ labels: { "gatehouse.dev/identity-binding": "aps" } }),
        stringData: { alice: "alice", bob: "bob" },
      }),
    ]);
    expect(
      ofKind("Capability")
        .map((o) => o.spec?.id)
        .sort(),
    ).toEqual(["aps.schedule.draft", "aps.schedule.publish", "aps.schedule.read"]);
    expect(ofKind("AgentSession")).toEqual([]);
  });

  it("applies cleanly again over the running namespace, naming every object it holds", async () => {
    const applied = await applyExamples(env.kubectl, env.aps.url);
    expect(applied.code).toBe(0);
    for (const object of rendered) {
      expect(applied.stdout).toMatch(
        new RegExp(
          `${object.kind.toLowerCase()}[^/]*/${object.metadata.name} (created|configured|unchanged)`,
        ),
      );
    }
  });

  it("runs the aps provider Ready, with a manifest that requires identity", async () => {
    const provider = await env.kubectl.json<{
      status?: { conditions?: Condition[]; manifest?: { provider: string; requiresIdentity: boolean } };
    }>("admin", ["get", "providerinstance", "aps", "-n", NAMESPACE]);
    expect(provider.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(provider.status?.manifest).toMatchObject({ provider: "aps", requiresIdentity: true });
  });

  it("makes every Capability it declares Ready with the provider's offer", async () => {
    for (const declared of ofKind("Capability")) {
      const capability = await eventually(`Capability ${declared.metadata.name} Ready`, 120_000, async () => {
        const current = await env.kubectl.json<{
          status?: { conditions?: Condition[]; toolName?: string; target?: unknown };
        }>("admin", ["get", "capability", declared.metadata.name!, "-n", NAMESPACE]);
        const ready = current.status?.conditions?.find((c) => c.type === "Ready");
        return ready?.status === "True" ? current : undefined;
      });
      expect(capability.status?.conditions?.find((c) => c.type === "Ready")?.reason).toBe("Offered");
      expect(capability.status?.toolName).toBe(declared.spec!.id!.replaceAll(".", "_"));
    }
    const publish = await env.kubectl.json<{ status?: { target?: unknown } }>("admin", [
      "get",
      "capability",
      "aps-schedule-publish",
      "-n",
      NAMESPACE,
    ]);
    expect(publish.status?.target).toEqual({
      kind: "plan",
      idArgument: "planId",
      versionArgument: "version",
    });
  });

  it("has sample sessions the API server admits when their subject creates them", async () => {
    const samples = sampleSessions();
    expect(samples.map(({ file }) => file).sort()).toEqual([
      "another-session.yaml",
      "bob-session.yaml",
      "session.yaml",
    ]);
    for (const { file, session } of samples) {
      const subject = session.spec!.subject!.user;
      const created = await env.kubectl.run(subject, [
        "create",
        "--dry-run=server",
        "-f",
        join(EXAMPLE_SESSIONS_DIR, file),
      ]);
      expect(created.code, `${file} as ${subject}: ${created.stderr}`).toBe(0);
    }
  });
});
