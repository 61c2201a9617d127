/**
 * The one module that knows which npm package Pi is and how it is configured from outside: the
 * package name (upstream renamed it; only this file changes), its binary, and the environment
 * variables it reads.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

const PACKAGE = "@mariozechner/pi-coding-agent";

interface Manifest {
  name: string;
  version: string;
  bin: { pi: string };
}

/**
 * The package's folder and manifest, found as Node finds packages: `node_modules/<name>` in this
 * folder or the nearest ancestor (its `exports` offer neither package.json nor a require entry).
 */
function installed(): { root: string; manifest: Manifest } {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const root = path.join(dir, "node_modules", PACKAGE);
    try {
      const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as Manifest;
      if (manifest.name === PACKAGE) return { root, manifest };
    } catch {
      // not installed here: try the parent
    }
    if (path.dirname(dir) === dir) throw new Error(`${PACKAGE} is not installed`);
  }
}

/** The package's `pi` entry point, a Node script (run it with `process.execPath`). */
export function piEntryPoint(): string {
  const { root, manifest } = installed();
  return path.join(root, manifest.bin.pi);
}

/** The installed version, for logs. */
export function piVersion(): string {
  return installed().manifest.version;
}

/**
 * Pi's environment: no startup network work (version check, package updates, telemetry), and its
 * whole state (models.json, settings, sessions) in `agentDir`, which is also its HOME and TMPDIR.
 */
export function piEnvironment(agentDir: string): Record<string, string> {
  return {
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    PI_CODING_AGENT_DIR: agentDir,
    HOME: agentDir,
    TMPDIR: agentDir,
    // jiti (Pi's loader for our extension) would cache transpiled code under node_modules.
    JITI_FS_CACHE: "false",
  };
}
