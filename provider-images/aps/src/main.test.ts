import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");

describe("aps provider process (src/main.ts)", () => {
  it("exits 1 at startup with one line per missing variable naming its fix, and no stack trace", async () => {
    const child = spawn(process.execPath, ["provider-images/aps/src/main.ts"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const stderr: string[] = [];
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    const [code] = await once(child, "exit");
    expect(code).toBe(1);
    expect(stderr.join("").trimEnd().split("\n")).toEqual([
      "APS_URL is required: set spec.config.APS_URL on the ProviderInstance (base URL of the APS business system)",
      expect.stringMatching(
        /^GATEHOUSE_JWKS_URL is required: the operator sets it on every provider container/,
      ),
      expect.stringMatching(
        /^GATEHOUSE_GRANT_AUDIENCE is required: the operator sets it on every provider container/,
      ),
    ]);
  });
});
