/**
 * Every API-server call the gateway makes is bounded in time (kube/runtime/client.ts), seen from the side of
 * an API server that accepts connections and never answers: a TCP relay in front of the real API
 * server that, while stalled, accepts and holds each connection without a byte. The gateway's own
 * code — the TokenReview of `tokenReviewer`, the SubjectAccessReview, the model key Secret read, an
 * Approval create — rejects within the bound with a GatehouseError `unavailable` that names the
 * request and the bound, which the gateway answers 503. Positive control: the same clients through
 * the relay forwarding get the real API server's answers.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse, stringify } from "yaml";
import { APPROVAL, GROUP, VERSION } from "../../operator/src/api/kinds.ts";
import { GatehouseError } from "../../operator/src/core/errors.ts";
import { tokenReviewer } from "../../operator/src/gateway/authenticate.ts";
import { errorReply } from "../../operator/src/gateway/error-reply.ts";
import { subjectAccessReviewer } from "../../operator/src/kube/access-review.ts";
import { secretModelKeys } from "../../operator/src/kube/model-keys.ts";
import {
  type KubeClients,
  loadKubeConfig,
  makeClients,
  statusCodeOf,
} from "../../operator/src/kube/runtime/client.ts";

const cluster = inject("cluster");
const TIMEOUT_MS = 1_000;

/** A relay to `target` that forwards, or — while stalled — accepts each connection and never answers. */
async function stallableRelay(target: URL) {
  const sockets = new Set<Socket>();
  let stalled = true;
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    if (stalled) return;
    const upstream = createConnection(Number(target.port || 443), target.hostname);
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, target.hostname, resolve));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    stall(on: boolean) {
      stalled = on;
      for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The rejection of `call` and how long it took; fails when it resolves. */
async function rejection(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const outcome = await call().then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  if (!outcome) throw new Error("expected a rejection, got an answer");
  return { error: outcome.error, ms: Date.now() - started };
}

describe("the gateway's API-server calls against an API server that never answers", () => {
  let relay: Awaited<ReturnType<typeof stallableRelay>>;
  let clients: KubeClients;

  beforeAll(async () => {
    const config = parse(readFileSync(cluster.kubeconfigPath, "utf8")) as {
      clusters: Array<{ cluster: { server: string } }>;
      "current-context": string;
    };
    const server = new URL(config.clusters[0]!.cluster.server);
    // The relay listens on the API server's own address (its serving certificate names it).
    relay = await stallableRelay(server);
    const relayed = new URL(server);
    relayed.port = String(relay.port);
    for (const entry of config.clusters) entry.cluster.server = relayed.origin;
    const file = join(tmpdir(), `gatehouse-stalled-${process.pid}.kubeconfig`);
    writeFileSync(file, stringify(config), { mode: 0o600 });
    clients = makeClients(loadKubeConfig(file, "admin", "gatehouse-test", undefined, TIMEOUT_MS));
  });
  afterAll(async () => {
    await relay?.close();
  });

  /** Asserts the call gave up within the bound with the clear `unavailable` naming `request`. */
  function expectTimedOut({ error, ms }: { error: unknown; ms: number }, request: RegExp): void {
    expect(error).toBeInstanceOf(GatehouseError);
    const message = (error as Error).message;
    expect(message).toMatch(request);
    expect(message).toMatch(/the API server did not answer .* within 1 s/);
    expect(isUnavailable(error)).toBe(true);
    expect(errorReply(error).code).toBe(503);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(TIMEOUT_MS + 2_000);
  }
  const isUnavailable = (error: unknown) => error instanceof GatehouseError && error.kind === "unavailable";

  it("gives up on the TokenReview within the bound, naming it", async () => {
    relay.stall(true);
    const review = tokenReviewer(clients);
    expectTimedOut(
      await rejection(() => review("garbage-token-stalled")),
      /POST \/apis\/authentication\.k8s\.io\/v1\/tokenreviews/,
    );
  });

  it("gives up on the SubjectAccessReview, the model key Secret read and an Approval create the same way", async () => {
    relay.stall(true);
    const authorize = subjectAccessReviewer(clients);
    expectTimedOut(
      await rejection(() =>
        authorize({
          user: { username: "alice", groups: [], extra: {} },
          resource: { group: "", resource: "pods", verb: "get", namespace: "default", name: "x" },
        }),
      ),
      /POST \/apis\/authorization\.k8s\.io\/v1\/subjectaccessreviews/,
    );
    const keys = secretModelKeys(clients.core, "default");
    const keyError = await rejection(() => keys.keyOf({ name: "model-key", key: "apiKey" }));
    // model-keys.ts wraps the error as `unavailable`, its message carrying ours.
    expectTimedOut(keyError, /GET \/api\/v1\/namespaces\/default\/secrets\/model-key/);
    expectTimedOut(
      await rejection(() =>
        clients.custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: "default",
          plural: APPROVAL.plural,
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: APPROVAL.kind, metadata: { name: "x" } },
        }),
      ),
      new RegExp(
        `POST /apis/${GROUP.replaceAll(".", "\\.")}/${VERSION}/namespaces/default/${APPROVAL.plural}`,
      ),
    );
  });

  it("positive control: through the relay forwarding, the same clients get the API server's answers", async () => {
    relay.stall(false);
    const review = tokenReviewer(clients);
    const refused = await rejection(() => review("garbage-token-forwarded"));
    expect((refused.error as GatehouseError).kind).toBe("forbidden");
    expect((refused.error as Error).message).toMatch(/Token not accepted/);
    const missing = await rejection(() =>
      clients.core.readNamespacedSecret({ namespace: "default", name: "no-such-secret-here" }),
    );
    expect(statusCodeOf(missing.error)).toBe(404);
  });
});
