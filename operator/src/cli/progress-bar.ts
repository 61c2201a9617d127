/**
 * A one-line progress bar for long command-line runs, drawn on a terminal only: on a TTY it redraws
 * itself in place (`\r`, cleared at the end); on a pipe or file it writes nothing, so logs and
 * captured output stay clean.
 */

/** The stream a bar draws on (stderr in practice). */
export interface BarStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** Draws `label [#####.....]  42%  4200/10000  1234/s` and keeps it up to date. */
export class ProgressBar {
  private readonly stream: BarStream;
  private readonly label: string;
  private readonly startedAt = performance.now();
  private drawn = false;

  /** A bar drawn on `stream` (when it is a TTY), `label` before it. Nothing is drawn until `update`. */
  constructor(stream: BarStream, label: string) {
    this.stream = stream;
    this.label = label;
  }

  /** Shows `done` of `total` units (`total` 0 → 100%). A no-op when the stream is not a TTY. */
  update(done: number, total: number): void {
    if (!this.stream.isTTY) return;
    const fraction = total > 0 ? Math.min(done / total, 1) : 1;
    const seconds = (performance.now() - this.startedAt) / 1000;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    const tail = ` ${String(Math.floor(fraction * 100)).padStart(3)}%  ${done}/${total}  ${rate}/s`;
    const width = Math.max(
      10,
      Math.min(40, (this.stream.columns ?? 80) - this.label.length - tail.length - 4),
    );
    const filled = Math.round(fraction * width);
    this.stream.write(`\r${this.label} [${"#".repeat(filled)}${".".repeat(width - filled)}]${tail}`);
    this.drawn = true;
  }

  /** Clears the bar's line, so what is printed next starts on a clean line. */
  finish(): void {
    if (this.drawn) this.stream.write("\r\x1b[2K");
    this.drawn = false;
  }
}
