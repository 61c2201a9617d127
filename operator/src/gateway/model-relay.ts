/**
 * Relaying an endpoint's answer to the pod (gateway/model-proxy.ts): the headers that pass, and the
 * body copied chunk by chunk as it arrives, metered on the way.
 */
import type { ServerResponse } from "node:http";

/** Response headers not relayed: hop-by-hop, framing (the gateway frames its own answer), cookies. */
const UNRELAYED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "content-length",
  "content-encoding",
  "set-cookie",
]);

/** The answer headers relayed to the pod: the endpoint's, without hop-by-hop and framing headers. */
export function relayedHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const named = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const relayed: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || UNRELAYED.has(lower) || named.has(lower)) continue;
    relayed[lower] = value;
  }
  return relayed;
}

/** Waits until `raw` can take more bytes or is gone. */
function drained(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off("drain", done);
      raw.off("close", done);
      resolve();
    };
    raw.once("drain", done);
    raw.once("close", done);
  });
}

/**
 * Copies `body` to `raw` chunk by chunk as it arrives, pushing every chunk into `meter`; the caller
 * ends `raw`. A pod that hangs up stops the copying, not the reading. Resolves with whether the body
 * arrived complete (if not, `raw` is destroyed: the pod sees the answer cut off).
 */
export async function relay(
  body: AsyncIterable<Uint8Array>,
  raw: ServerResponse,
  meter: { push(bytes: Uint8Array): void },
): Promise<{ complete: boolean; error?: unknown }> {
  try {
    for await (const chunk of body) {
      meter.push(chunk);
      if (raw.destroyed) continue;
      if (!raw.write(chunk)) await drained(raw);
    }
    return { complete: true };
  } catch (error) {
    // The endpoint broke off mid-answer: the pod sees the answer cut off, as it would without the proxy.
    raw.destroy();
    return { complete: false, error };
  }
}
