/**
 * JSON Lines framing for engine subprocesses: records end at LF only (a trailing CR is dropped).
 * Node's `readline` also breaks at U+2028 and U+2029, which JSON allows unescaped inside strings, so
 * it would cut a record in two; this splitter never does.
 */
import { StringDecoder } from "node:string_decoder";

/** Feeds chunks in, hands out whole lines (without their LF) to `onLine`. */
export class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private buffer = "";
  private readonly onLine: (line: string) => void;

  constructor(onLine: (line: string) => void) {
    this.onLine = onLine;
  }

  push(chunk: Buffer | string): void {
    this.buffer += typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    for (let end = this.buffer.indexOf("\n"); end !== -1; end = this.buffer.indexOf("\n")) {
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 1);
      this.onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
    }
  }

  /** The stream ended: a last line without LF is still a line. */
  end(): void {
    this.buffer += this.decoder.end();
    const rest = this.buffer;
    this.buffer = "";
    if (rest.length > 0) this.onLine(rest.endsWith("\r") ? rest.slice(0, -1) : rest);
  }
}

/** Calls `onLine` for each line `stream` carries until it ends. Returns a detach function. */
export function readLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): () => void {
  const splitter = new LineSplitter(onLine);
  const data = (chunk: Buffer | string) => splitter.push(chunk);
  const end = () => splitter.end();
  stream.on("data", data);
  stream.on("end", end);
  return () => {
    stream.off("data", data);
    stream.off("end", end);
  };
}

/** One record as it goes on the wire: JSON and an LF (JSON.stringify never emits a raw LF). */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}
