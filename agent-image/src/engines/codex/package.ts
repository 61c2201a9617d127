/**
 * The one module that knows which npm package Codex is and where its binary lies: `@openai/codex`
 * ships a Node launcher and, per platform, an optional dependency holding the native binary
 * (`@openai/codex-linux-x64`: `vendor/<target>/bin/codex`). The agent runs the binary directly, so no
 * second Node process sits between it and Codex.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = "@openai/codex";

/** The platform package and Rust target of this machine (the ones the launcher picks). */
function platformPackage(): { name: string; target: string } {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const rust = process.arch === "arm64" ? "aarch64" : "x86_64";
  if (process.platform === "linux")
    return { name: `${PACKAGE}-linux-${arch}`, target: `${rust}-unknown-linux-musl` };
  if (process.platform === "darwin")
    return { name: `${PACKAGE}-darwin-${arch}`, target: `${rust}-apple-darwin` };
  throw new Error(`${PACKAGE} has no binary for ${process.platform}`);
}

/** `node_modules/<name>` in this folder or the nearest ancestor, as Node finds packages. */
function installed(name: string): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const root = path.join(dir, "node_modules", name);
    if (existsSync(path.join(root, "package.json"))) return root;
    if (path.dirname(dir) === dir) throw new Error(`${name} is not installed`);
  }
}

/** The native `codex` binary of this platform. */
export function codexBinary(): string {
  const { name, target } = platformPackage();
  return path.join(installed(name), "vendor", target, "bin", "codex");
}

/** The installed version of `@openai/codex`, for logs. */
export function codexVersion(): string {
  const manifest = JSON.parse(readFileSync(path.join(installed(PACKAGE), "package.json"), "utf8")) as {
    version: string;
  };
  return manifest.version;
}

/**
 * Codex's environment: its whole state in `home` (CODEX_HOME, also HOME and TMPDIR), no inherited
 * variables (the agent's token file path and gateway URL stay out of Codex's reach), and no colour
 * codes in its stderr, which ends up in error messages.
 */
export function codexEnvironment(home: string): Record<string, string> {
  return {
    CODEX_HOME: home,
    HOME: home,
    TMPDIR: home,
    PATH: "/usr/local/bin:/usr/bin:/bin",
    NO_COLOR: "1",
    RUST_LOG: "error",
  };
}
