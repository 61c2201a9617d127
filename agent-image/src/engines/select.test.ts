import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const AGENT_SRC = fileURLToPath(new URL("../", import.meta.url));

/**
 * The modules a fresh Node process resolves to load select.ts and let `selectEngine` build `engine`
 * (a resolve hook records them).
 */
function modulesLoadedFor(engine: string): string[] {
  const script = `
    import { registerHooks } from "node:module";
    const loaded = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
    const { loadConfig } = await import("./config.ts");
    const { createGatewayClient } = await import("./gateway-client.ts");
    const { selectEngine } = await import("./engines/select.ts");
    const { pino } = await import("pino");
    const config = loadConfig({ GATEHOUSE_GATEWAY_URL: "http://127.0.0.1:9", GATEHOUSE_ENGINE: ${JSON.stringify(engine)} });
    const gateway = createGatewayClient({ baseUrl: config.gatewayUrl, tokenFile: config.tokenFile });
    const selected = await selectEngine(config, gateway, pino({ level: "silent" }));
    await selected.close();
    process.stdout.write(JSON.stringify(loaded));
  `;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: AGENT_SRC,
    encoding: "utf8",
  });
  if (child.status !== 0) throw new Error(child.stderr);
  return JSON.parse(child.stdout) as string[];
}

describe("selectEngine", () => {
  it("loads only the builtin engine's modules for builtin: nothing of Pi's or Codex's", () => {
    const loaded = modulesLoadedFor("builtin");
    expect(loaded.some((url) => url.includes("/engines/builtin/"))).toBe(true);
    expect(loaded.filter((url) => /\/engines\/(pi|codex)\//.test(url))).toEqual([]);
  });

  // Pi's engine shares the builtin engine's context and compaction modules.
  it("loads Pi's host for pi and nothing of Codex's", () => {
    const loaded = modulesLoadedFor("pi");
    expect(loaded.some((url) => url.includes("/engines/pi/host.ts"))).toBe(true);
    expect(loaded.filter((url) => /\/engines\/codex\//.test(url))).toEqual([]);
  });
});
