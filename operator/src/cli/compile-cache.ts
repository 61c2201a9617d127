/**
 * Fills node's compile cache (the directory NODE_COMPILE_CACHE names) with every module the image's
 * programs load, as JavaScript and as V8 code. The operator image's build runs it as the image's user
 * and with the entrypoint's V8 flags: both are part of the cache's key. A container then finds its
 * modules there, so node never loads its TypeScript stripper, a WebAssembly module that holds
 * 15–20 MiB of each component's memory for as long as it runs, and starts sooner. A module the cache
 * does not hold (another user, other V8 flags, an edited file) is stripped as it would be without one.
 *
 *   NODE_COMPILE_CACHE=<dir> node operator/src/cli/compile-cache.ts
 *
 * Exit codes: 0 filled, 2 NODE_COMPILE_CACHE unset; an error loading a module is thrown.
 */
import { execFileSync } from "node:child_process";
import { flushCompileCache } from "node:module";
import { fileURLToPath } from "node:url";

/** The image's entrypoint: it runs its program on import, so it is started (with `--help`) instead. */
export const ENTRYPOINT = fileURLToPath(new URL("../main.ts", import.meta.url));

/**
 * What the entrypoint and its programs load on their own, by `import()` or as a worker: imported here,
 * with everything they import. compile-cache.test.ts checks this against main.ts.
 */
export const PROGRAM_MODULES = [
  "../programs/gateway.ts",
  "../programs/controller.ts",
  "./migrate-command.ts",
  "../store/audit/verify-worker.ts",
].map((path) => fileURLToPath(new URL(path, import.meta.url)));

if (import.meta.main) {
  if (!process.env.NODE_COMPILE_CACHE) {
    process.stderr.write(
      "NODE_COMPILE_CACHE: set it to the directory to fill (the image's is /app/compile-cache)\n",
    );
    process.exit(2);
  }
  // The same V8 flags as this process: they are part of the cache's key.
  execFileSync(process.execPath, [...process.execArgv, ENTRYPOINT, "--help"], { stdio: "ignore" });
  for (const path of PROGRAM_MODULES) await import(path);
  flushCompileCache();
  process.stdout.write(`compile cache filled: ${process.env.NODE_COMPILE_CACHE}\n`);
}
