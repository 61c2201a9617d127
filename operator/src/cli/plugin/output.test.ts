import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

const OUTPUT_MODULE = new URL("./output.ts", import.meta.url).href;

/**
 * Runs a Node child that writes 20 MB of lines to stdout (far beyond a pipe's buffer), reads its first
 * chunk through a real pipe and then closes the pipe, as `| head -1` does. The child exits 3 if every
 * write succeeded, i.e. if the pipe never closed under it.
 */
function writeIntoClosedPipe(handled: boolean): Promise<{ code: number | null; stderr: string }> {
  const script = `
    import { endQuietlyWhenStdoutCloses } from ${JSON.stringify(OUTPUT_MODULE)};
    if (${handled}) endQuietlyWhenStdoutCloses();
    const line = "x".repeat(99) + "\\n";
    for (let i = 0; i < 200000; i++) {
      process.stdout.write(line);
      if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    process.exitCode = 3;
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  child.stdout.once("data", () => child.stdout.destroy());
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stderr }));
  });
}

describe("a closed stdout pipe", () => {
  it("ends the plugin quietly with exit code 0", async () => {
    const result = await writeIntoClosedPipe(true);
    expect(result).toEqual({ code: 0, stderr: "" });
  });

  it("crashes with an EPIPE stack trace when nothing handles it (what the handler prevents)", async () => {
    const result = await writeIntoClosedPipe(false);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBe(3);
    expect(result.stderr).toContain("EPIPE");
  });
});
