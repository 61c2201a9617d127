/**
 * Fills node's compile cache (the directory NODE_COMPILE_CACHE names) with every module the agent
 * loads, whichever engine a pod runs, as JavaScript and as V8 code. The agent image's build runs it as
 * the image's user and with the entrypoint's V8 flags (none), which are part of the cache's key. An
 * agent pod starts cold every time (its root filesystem is read-only and new); from the image's cache
 * it neither strips TypeScript nor compiles the OpenAI SDK or an engine's host again, about half of
 * its start's CPU (docs/operations.md, "How fast sessions start"). A module the cache does not hold is
 * loaded as without one.
 *
 *   NODE_COMPILE_CACHE=<dir> node agent-image/src/compile-cache.ts
 *
 * Exit codes: 0 filled, 2 NODE_COMPILE_CACHE unset; an error loading a module is thrown.
 */
import { execFileSync } from "node:child_process";
import { flushCompileCache } from "node:module";
import { fileURLToPath } from "node:url";

/** The image's entrypoint: it runs the agent on import, so it is started (with `--help`) instead. */
export const ENTRYPOINT = fileURLToPath(new URL("./main.ts", import.meta.url));

/**
 * What `engines/select.ts` loads by `import()` for each engine, with everything those import;
 * compile-cache.test.ts checks this against select.ts.
 */
export const ENGINE_MODULES = [
  "./engines/codex/engine.ts",
  "./engines/codex/host.ts",
  "./engines/pi/engine.ts",
  "./engines/pi/host.ts",
  "./engines/builtin/engine.ts",
  "./engines/builtin/retry.ts",
  "openai",
];

if (import.meta.main) {
  if (!process.env.NODE_COMPILE_CACHE) {
    process.stderr.write(
      "NODE_COMPILE_CACHE: set it to the directory to fill (the image's is /app/compile-cache)\n",
    );
    process.exit(2);
  }
  // The same V8 flags as this process: they are part of the cache's key.
  execFileSync(process.execPath, [...process.execArgv, ENTRYPOINT, "--help"], { stdio: "ignore" });
  for (const specifier of ENGINE_MODULES) await import(specifier);
  flushCompileCache();
  process.stdout.write(`compile cache filled: ${process.env.NODE_COMPILE_CACHE}\n`);
}
