import { once } from "node:events";
import { connect, createServer, type Server } from "node:net";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { readyEndpoints } from "./service-proxy.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";

const HOST = "127.0.0.1";
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A server that answers `<name>:<what the client sent>` and then closes. */
async function upstream(name: string): Promise<number> {
  const server: Server = createServer((socket) => {
    socket.once("data", (chunk) => socket.end(`${name}:${chunk.toString()}`));
  });
  server.listen(0, HOST);
  await once(server, "listening");
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = server.address();
  return typeof address === "object" && address ? address.port : 0;
}

/** A port nothing listens on (a server bound and closed again). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, HOST);
  await once(server, "listening");
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address ? address.port : 0;
}

/** Sends `text` through `proxy` and resolves with everything received until the peer closed. */
async function exchange(proxy: TcpProxy, text: string): Promise<string> {
  const socket = connect({ host: proxy.host, port: proxy.port });
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk.toString();
  });
  socket.on("error", () => {});
  await once(socket, "connect");
  socket.write(text);
  await once(socket, "close");
  return received;
}

async function proxyTo(targets: () => Array<{ host: string; port: number }>): Promise<TcpProxy> {
  const proxy = await startTcpProxy(HOST, 0, targets);
  closers.push(() => proxy.close());
  return proxy;
}

describe("the TCP proxy", () => {
  it("pipes a connection's bytes to the target and its answer back", async () => {
    const port = await upstream("a");
    const proxy = await proxyTo(() => [{ host: HOST, port }]);
    expect(await exchange(proxy, "hello")).toBe("a:hello");
  });

  it("gives the connection to the next target when the first refuses it", async () => {
    const refused = await closedPort();
    const port = await upstream("b");
    const proxy = await proxyTo(() => [
      { host: HOST, port: refused },
      { host: HOST, port },
    ]);
    expect(await exchange(proxy, "x")).toBe("b:x");
  });

  it("closes the connection at once when there is no target", async () => {
    const proxy = await proxyTo(() => []);
    expect(await exchange(proxy, "anyone?")).toBe("");
  });

  it("asks for the targets again for every connection", async () => {
    const ports = [await upstream("one"), await upstream("two")];
    let calls = 0;
    const proxy = await proxyTo(() => [{ host: HOST, port: ports[calls++ % 2] ?? 0 }]);
    expect([await exchange(proxy, "1"), await exchange(proxy, "2"), await exchange(proxy, "3")]).toEqual([
      "one:1",
      "two:2",
      "one:3",
    ]);
  });
});

describe("readyEndpoints", () => {
  const slice = (
    ports: Array<{ name?: string; port: number }>,
    endpoints: Array<{ addresses: string[]; ready?: boolean }>,
  ): V1EndpointSlice => ({
    addressType: "IPv4",
    ports: ports.map((p) => ({ ...p, protocol: "TCP" })),
    endpoints: endpoints.map((e) => ({
      addresses: e.addresses,
      ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }),
    })),
  });

  it("offers the ready addresses (ready unset counts as ready) with the named port", () => {
    const slices = [
      slice(
        [
          { name: "http", port: 8443 },
          { name: "metrics", port: 8081 },
        ],
        [
          { addresses: ["10.88.0.7"], ready: true },
          { addresses: ["10.88.0.5"] },
          { addresses: ["10.88.0.9"], ready: false },
        ],
      ),
    ];
    expect(readyEndpoints(slices, "http")).toEqual([
      { host: "10.88.0.5", port: 8443 },
      { host: "10.88.0.7", port: 8443 },
    ]);
    expect(readyEndpoints(slices, "metrics").map((t) => t.port)).toEqual([8081, 8081]);
  });

  it("offers nothing for a port name the slices lack, or without a name when they have several ports", () => {
    const slices = [
      slice(
        [
          { name: "http", port: 80 },
          { name: "grpc", port: 90 },
        ],
        [{ addresses: ["10.88.0.5"] }],
      ),
    ];
    expect(readyEndpoints(slices, "other")).toEqual([]);
    expect(readyEndpoints(slices)).toEqual([]);
    expect(readyEndpoints([slice([{ port: 80 }], [{ addresses: ["10.88.0.5"] }])])).toEqual([
      { host: "10.88.0.5", port: 80 },
    ]);
  });
});
