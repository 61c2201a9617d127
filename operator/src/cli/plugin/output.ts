import { escapeControls } from "./terminal-text.ts";

/** Where a subcommand writes: its result to `out` (stdout), diagnostics to `err` (stderr). */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/**
 * The process's own stdout and stderr, one line per call. Every line is escaped (terminal-text.ts):
 * whatever a subcommand prints — an API server's message quoting an agent's input, say — reaches the
 * terminal with no control or bidi character.
 */
export const processOutput: Output = {
  out: (text) => process.stdout.write(`${escapeControls(text)}\n`),
  err: (text) => process.stderr.write(`${escapeControls(text)}\n`),
};

/**
 * Makes a closed stdout pipe end the process quietly with exit code 0, as coreutils tools die of
 * SIGPIPE when the reader goes (`kubectl gatehouse transcript S | head -2`). Node ignores SIGPIPE, so
 * a write to a closed pipe fails with EPIPE, which `stream` emits as an `error` event; unhandled, that
 * crashes the process with a stack trace. Any other error of `stream` is thrown on, as before.
 */
export function endQuietlyWhenStdoutCloses(stream: NodeJS.WriteStream = process.stdout): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}
