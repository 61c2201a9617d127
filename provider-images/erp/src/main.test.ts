import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { type FakeErp, startFakeErp } from "@gatehouse/fakes/erp";
import { canonicalDigest, type InvokeRequest, Manifest, Receipt } from "@gatehouse/provider-sdk";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
const AUDIENCE = "plant-a/erp";
let child: ChildProcess | undefined;
let erp: FakeErp | undefined;
let jwksServer: Server | undefined;

afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGKILL");
    await once(child, "exit");
  }
  await erp?.close();
  await new Promise((resolve) => (jwksServer ? jwksServer.close(resolve) : resolve(undefined)));
  child = undefined;
  erp = undefined;
  jwksServer = undefined;
});

/** The operator's side of grants, in small: a key, its JWKS on a local server, and a grant for one invoke. */
async function operatorKeys() {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const jwk = { ...(await exportJWK(publicKey)), kid: "test-key", alg: "EdDSA", use: "sig" };
  const server = createServer((_request, response) => response.end(JSON.stringify({ keys: [jwk] })));
  jwksServer = server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/grants/jwks`;
  const grantFor = (body: InvokeRequest) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: "gatehouse",
      aud: AUDIENCE,
      sub: body.subject.user,
      jti: `${body.executionId}.1`,
      iat: now,
      exp: now + 60,
      cap: body.capability,
      idempotencyKey: body.idempotencyKey,
      argsDigest: canonicalDigest(body),
    })
      .setProtectedHeader({ alg: "EdDSA", kid: "test-key" })
      .sign(privateKey);
  };
  return { jwksUrl, grantFor };
}

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
    const keys = await operatorKeys();
    const { lines } = run({
      ERP_URL: erp.url,
      HOST: "127.0.0.1",
      PORT: "0",
      GATEHOUSE_JWKS_URL: keys.jwksUrl,
      GATEHOUSE_GRANT_AUDIENCE: AUDIENCE,
    });
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
    const body: InvokeRequest = {
      executionId: "e1",
      idempotencyKey: "k1",
      capability: "erp.material.stock",
      arguments: { materialId: "bracket-b", plant: "plant-a" },
      subject: { user: "bob", groups: [] },
    };
    const response = await fetch(`${url}/v1/invoke`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${await keys.grantFor(body)}` },
      body: JSON.stringify(body),
    });
    expect(Receipt.parse(await response.json())).toMatchObject({
      status: "succeeded",
      result: { unrestricted: 620 },
    });
    child!.kill("SIGTERM");
    const [code] = await once(child!, "exit");
    expect(code).toBe(0);
  });

  it("refuses to start without the grant verification settings, naming them, with exit code 1", async () => {
    erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
    const { process: started, stderr } = run({ ERP_URL: erp.url, HOST: "127.0.0.1", PORT: "0" });
    const [code] = await once(started, "exit");
    expect(code).toBe(1);
    expect(stderr.join("").trimEnd().split("\n")).toEqual([
      expect.stringMatching(
        /^GATEHOUSE_JWKS_URL is required: the operator sets it on every provider container/,
      ),
      expect.stringMatching(
        /^GATEHOUSE_GRANT_AUDIENCE is required: the operator sets it on every provider container/,
      ),
    ]);
  });

  it("exits 1 at startup with one line per bad variable naming its fix, and no stack trace", async () => {
    const keys = await operatorKeys();
    const { process: started, stderr } = run({
      PORT: "eighty",
      GATEHOUSE_JWKS_URL: keys.jwksUrl,
      GATEHOUSE_GRANT_AUDIENCE: AUDIENCE,
    });
    const [code] = await once(started, "exit");
    expect(code).toBe(1);
    expect(stderr.join("").trimEnd().split("\n")).toEqual([
      "PORT is invalid (Invalid input: expected number, received NaN): set spec.config.PORT on the ProviderInstance (listen port)",
      "ERP_URL is required: set spec.config.ERP_URL on the ProviderInstance (base URL of the ERP business system)",
    ]);
  });
});
