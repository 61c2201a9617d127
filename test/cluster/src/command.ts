import { execFile } from "node:child_process";
import { HarnessError } from "./errors.ts";

/** Result of {@link runCommand}: the captured output as text. */
export type CommandOutput = { stdout: string; stderr: string };

/**
 * Runs `file` with `args` (no shell; environment `options.env`, default this process's) and resolves
 * with its output. Rejects with an `unavailable` HarnessError carrying the command line, exit code and
 * stderr when it exits non-zero or cannot start.
 */
export function runCommand(
  file: string,
  args: readonly string[],
  options: { cwd?: string; input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<CommandOutput> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        if (err) {
          const code = (err as { code?: unknown }).code;
          reject(
            new HarnessError(
              "unavailable",
              `${file} ${args.join(" ")} failed (exit ${String(code)}): ${stderr.trim() || err.message}`,
              { cause: err },
            ),
          );
          return;
        }
        resolve({ stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
