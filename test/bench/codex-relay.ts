/**
 * Benchmark of the codex engine's loopback status relay (agent-image/src/engines/codex/status-relay.ts):
 * the time to the first byte of a streamed (SSE) model answer through the relay, against the same
 * request sent straight to the endpoint, interleaved in the same run. The endpoint is a local HTTP
 * server that sends its headers and first event at once and ends the stream a moment later, so the
 * time measured is the hops' own: a relay that buffered the stream would show the whole delay.
 *
 * Writes test/bench/results/codex-relay.json.
 *
 *   node test/bench/codex-relay.ts [--requests N]    (default 300, after 20 warm-up requests each way)
 */
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { StatusRelay } from "../../agent-image/src/engines/codex/status-relay.ts";
import { p50p95, ratio } from "./percentiles.ts";

const RESULTS = fileURLToPath(new URL("./results/codex-relay.json", import.meta.url));
const { values } = parseArgs({ options: { requests: { type: "string", default: "300" } } });
const requests = Number(values.requests);
/** How long the endpoint holds the stream open after its first event. */
const HOLD_MS = 20;

const endpoint = http.createServer((request, response) => {
  request.resume();
  response.writeHead(200, { "content-type": "text/event-stream" });
  response.write('event: response.created\ndata: {"type":"response.created"}\n\n');
  setTimeout(
    () => response.end('event: response.completed\ndata: {"type":"response.completed"}\n\n'),
    HOLD_MS,
  );
});
endpoint.listen(0, "127.0.0.1");
await once(endpoint, "listening");
const direct = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
const relay = new StatusRelay(direct);
const relayed = await relay.start();
const agent = new http.Agent({ keepAlive: true });

/** Milliseconds to the first body byte and to the end of one streamed answer from `base`. */
function streamed(base: string): Promise<{ firstByte: number; whole: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${base}/responses`,
      { method: "POST", agent, headers: { "content-type": "application/json", "thread-id": "bench" } },
      (response) => {
        let firstByte: number | undefined;
        response.on("data", () => {
          firstByte ??= performance.now() - started;
        });
        response.on("end", () =>
          resolve({ firstByte: firstByte ?? Number.NaN, whole: performance.now() - started }),
        );
      },
    );
    request.on("error", reject);
    request.end('{"model":"bench","stream":true}');
  });
}

for (let i = 0; i < 20; i++) {
  await streamed(direct);
  await streamed(relayed);
}
const samples = {
  direct: [] as number[],
  relayed: [] as number[],
  directWhole: [] as number[],
  relayedWhole: [] as number[],
};
for (let i = 0; i < requests; i++) {
  // Alternating which goes first keeps any drift of the machine out of the ratio.
  const order = i % 2 === 0 ? ([direct, relayed] as const) : ([relayed, direct] as const);
  for (const base of order) {
    const { firstByte, whole } = await streamed(base);
    if (base === direct) {
      samples.direct.push(firstByte);
      samples.directWhole.push(whole);
    } else {
      samples.relayed.push(firstByte);
      samples.relayedWhole.push(whole);
    }
  }
}
await relay.close();
agent.destroy();
endpoint.close();

const directTtfb = p50p95(samples.direct);
const relayedTtfb = p50p95(samples.relayed);
const result = {
  requests,
  holdMs: HOLD_MS,
  directFirstByte: directTtfb,
  relayedFirstByte: relayedTtfb,
  relayAddedFirstByteP50Ms: Math.round((relayedTtfb.p50Ms - directTtfb.p50Ms) * 10) / 10,
  firstByteRatioP50: ratio(relayedTtfb.p50Ms, directTtfb.p50Ms),
  directWhole: p50p95(samples.directWhole),
  relayedWhole: p50p95(samples.relayedWhole),
};
writeFileSync(RESULTS, `${JSON.stringify({ ...result, measuredAt: new Date().toISOString() }, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
