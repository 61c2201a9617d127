import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { type FakeErp, startFakeErp } from "@gatehouse/fakes/erp";
import { Manifest, Receipt } from "@gatehouse/provider-sdk";
import { afterEach, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
let child: ChildProcess | undefined;
let erp: FakeErp | undefined;

afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGKILL");
    await once(child, "exit");
  }
  await erp?.close();
  child = undefined;
  erp = undefined;
});

/** Runs the entrypoint the image map names, as the local node would, and collects its stdout lines. */
function run(env: Record<string, string>) {
  child = spawn(process.execPath, ["provider-images/erp/src/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines = createInterface({ input: child.stdout! });
  const stderr: string[] = [];
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  return { process: child, lines, stderr };
}

describe("erp provider process (src/main.ts)", () => {
  it("listens on the configured address and serves invokes against ERP_URL", async () => {
    erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
    const { lines } = run({ ERP_URL: erp.url, HOST: "127.0.0.1", PORT: "0" });
    let url: string | undefined;
    for await (const line of lines) {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === "erp provider listening") {
        url = entry.url;
        break;
      }
    }
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const manifest = Manifest.parse(await (await fetch(`${url}/v1/manifest`)).json());
    expect(manifest.provider).toBe("erp");
    const response = await fetch(`${url}/v1/invoke`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        executionId: "e1",
        idempotencyKey: "k1",
        capability: "erp.material.stock",
        arguments: { materialId: "bracket-b", plant: "plant-a" },
        subject: { user: "bob", groups: [] },
      }),
    });
    expect(Receipt.parse(await response.json())).toMatchObject({
      status: "succeeded",
      result: { unrestricted: 620 },
    });
    child!.kill("SIGTERM");
    const [code] = await once(child!, "exit");
    expect(code).toBe(0);
  });

  it("exits at startup naming ERP_URL when it is missing", async () => {
    const { process: started, stderr } = run({});
    const [code] = await once(started, "exit");
    expect(code).not.toBe(0);
    expect(stderr.join("")).toContain("ERP_URL");
  });
});
