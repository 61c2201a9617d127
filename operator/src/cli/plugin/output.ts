/** Where a subcommand writes: its result to `out` (stdout), diagnostics to `err` (stderr). */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** The process's own stdout and stderr, one line per call. */
export const processOutput: Output = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};
