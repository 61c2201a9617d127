/**
 * The agent process's own start, apart from the cluster: CPU time (user + system, node's bootstrap
 * included) of a fresh `node` that loads what agent-image/src/main.ts loads and lets `selectEngine`
 * build `engine` (its engine's modules only), without running a session. Measured as CPU time, not
 * wall time, because the machine is shared and the wall clock of a 300 ms process there is mostly
 * waiting; once without Node's compile cache, as a pod starts today, and once with a warm cache
 * (NODE_COMPILE_CACHE), as a pod would start from an image that carries one.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { percentile } from "./percentiles.ts";

const AGENT_SRC = fileURLToPath(new URL("../../agent-image/src/", import.meta.url));

function script(engine: string): string {
  return `
    await import("pino");
    const { loadConfig } = await import("./config.ts");
    const { createGatewayClient } = await import("./gateway-client.ts");
    await import("./run-agent.ts");
    const { selectEngine } = await import("./engines/select.ts");
    const { pino } = await import("pino");
    const config = loadConfig({ GATEHOUSE_GATEWAY_URL: "http://127.0.0.1:9", GATEHOUSE_ENGINE: ${JSON.stringify(engine)},
      GATEHOUSE_ENGINE_DIR: ${JSON.stringify(join(tmpdir(), "gatehouse-agent-start"))} });
    const gateway = createGatewayClient({ baseUrl: config.gatewayUrl, tokenFile: config.tokenFile });
    await selectEngine(config, gateway, pino({ level: "silent" }));
    const { user, system } = process.cpuUsage();
    process.stdout.write(String((user + system) / 1000));
    process.exit(0);
  `;
}

function cpuMs(engine: string, env: NodeJS.ProcessEnv): number {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script(engine)], {
    cwd: AGENT_SRC,
    encoding: "utf8",
    env,
  });
  if (child.status !== 0) throw new Error(`loading the ${engine} agent failed: ${child.stderr}`);
  return Number(child.stdout);
}

/** p50 and p95 CPU milliseconds of `runs` fresh loads of each engine's agent, without and with a warm compile cache. */
export function agentStartCpu(
  engines: readonly string[],
  runs = 10,
): Record<
  string,
  { coldP50Ms: number; coldP95Ms: number; compileCacheP50Ms: number; compileCacheP95Ms: number }
> {
  const cacheDir = mkdtempSync(join(tmpdir(), "gatehouse-compile-cache-"));
  try {
    const base = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/" };
    const cold = { ...base, NODE_DISABLE_COMPILE_CACHE: "1" };
    const cached = { ...base, NODE_COMPILE_CACHE: cacheDir };
    const result: ReturnType<typeof agentStartCpu> = {};
    for (const engine of engines) {
      cpuMs(engine, cached); // fills the cache
      const without: number[] = [];
      const withCache: number[] = [];
      for (let i = 0; i < runs; i++) {
        without.push(cpuMs(engine, cold));
        withCache.push(cpuMs(engine, cached));
      }
      result[engine] = {
        coldP50Ms: percentile(without, 0.5),
        coldP95Ms: percentile(without, 0.95),
        compileCacheP50Ms: percentile(withCache, 0.5),
        compileCacheP95Ms: percentile(withCache, 0.95),
      };
    }
    return result;
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}
