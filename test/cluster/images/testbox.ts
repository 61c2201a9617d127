/**
 * The `gatehouse/testbox:dev` image: one small behaviour per run, chosen by its first argument, for the
 * local node's tests. Every line it prints goes to the container log, where tests read it.
 *
 *   report VAR... [--file PATH]...   prints `env VAR=<json value>` per variable and `file PATH=<json
 *                                    content>` per file (PATH is a mount path, read under
 *                                    $LOCAL_NODE_ROOT), then exits 0
 *   exit CODE [MS]                   waits MS milliseconds (default 0), then exits with CODE
 *   sleep MS                         runs MS milliseconds (forever when MS is `forever`), exits 0;
 *                                    on SIGTERM prints `received SIGTERM` and exits 0
 *   ignore-sigterm                   runs forever and ignores SIGTERM (prints `ignored SIGTERM`)
 *   connect HOST PORT                one TCP connection attempt (2 s): prints `connected` and exits 0,
 *                                    or `failed <error code>` and exits 1
 *   serve [tcp:|udp:]PORT...         listens on each PORT on all addresses (TCP unless `udp:`), answers
 *                                    `ok` to each TCP connection and to each UDP datagram
 *   probe PORT                       an HTTP server on PORT for tests run from the host:
 *                                    `GET /connect?host=H&port=P&protocol=tcp|udp` makes one attempt from
 *                                    inside the pod (TCP: connect; UDP: a datagram that must be answered,
 *                                    1.5 s) and answers `connected` or `failed <error code>`
 *
 * Each run starts by printing `started <verb> at <epoch ms>`; a handled SIGTERM prints
 * `received SIGTERM at <epoch ms>`.
 */

import { createSocket } from "node:dgram";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { connect, createServer } from "node:net";
import { join } from "node:path";

const [verb = "", ...args] = process.argv.slice(2);
console.log(`started ${verb} at ${Date.now()}`);

const forever = (): void => {
  setInterval(() => {}, 1 << 30);
};

switch (verb) {
  case "report": {
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] ?? "";
      if (arg === "--file") {
        const path = args[++i] ?? "";
        const content = readFileSync(join(process.env.LOCAL_NODE_ROOT ?? "/", path), "utf8");
        console.log(`file ${path}=${JSON.stringify(content)}`);
      } else {
        console.log(`env ${arg}=${JSON.stringify(process.env[arg] ?? null)}`);
      }
    }
    break;
  }
  case "exit": {
    const code = Number(args[0] ?? "0");
    setTimeout(() => process.exit(code), Number(args[1] ?? "0"));
    break;
  }
  case "sleep": {
    process.on("SIGTERM", () => {
      console.log(`received SIGTERM at ${Date.now()}`);
      process.exit(0);
    });
    if (args[0] === "forever") forever();
    else setTimeout(() => process.exit(0), Number(args[0] ?? "0"));
    break;
  }
  case "ignore-sigterm": {
    process.on("SIGTERM", () => console.log(`ignored SIGTERM at ${Date.now()}`));
    forever();
    break;
  }
  case "connect": {
    const socket = connect({ host: args[0] ?? "", port: Number(args[1] ?? "0"), timeout: 2_000 });
    socket.once("connect", () => {
      console.log("connected");
      socket.destroy();
      process.exit(0);
    });
    socket.once("timeout", () => {
      console.log("failed ETIMEDOUT");
      process.exit(1);
    });
    socket.once("error", (err: NodeJS.ErrnoException) => {
      console.log(`failed ${err.code ?? err.message}`);
      process.exit(1);
    });
    break;
  }
  case "serve": {
    for (const arg of args.length > 0 ? args : ["8080"]) {
      const [protocol, port] = arg.startsWith("udp:")
        ? ["udp", arg.slice(4)]
        : ["tcp", arg.replace(/^tcp:/, "")];
      if (protocol === "udp") {
        const socket = createSocket("udp4");
        socket.on("message", (_msg, peer) => socket.send("ok\n", peer.port, peer.address));
        socket.bind(Number(port), "0.0.0.0", () => console.log(`listening on udp ${port}`));
        continue;
      }
      const server = createServer((socket) => {
        socket.on("error", () => {}); // a tcpSocket probe resets its connection at once
        socket.end("ok\n");
      });
      server.listen(Number(port), "0.0.0.0", () => console.log(`listening on ${port}`));
    }
    process.on("SIGTERM", () => {
      console.log(`received SIGTERM at ${Date.now()}`);
      process.exit(0);
    });
    break;
  }
  case "probe": {
    const server = createHttpServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://probe");
      const host = url.searchParams.get("host") ?? "";
      const port = Number(url.searchParams.get("port") ?? "0");
      const attempt =
        url.searchParams.get("protocol") === "udp" ? udpAttempt(host, port) : tcpAttempt(host, port);
      void attempt.then((outcome) => res.end(outcome));
    });
    server.listen(Number(args[0] ?? "9000"), "0.0.0.0", () => console.log(`probing on ${args[0]}`));
    process.on("SIGTERM", () => process.exit(0));
    break;
  }
  default:
    console.error(
      `testbox: unknown verb "${verb}" (report, exit, sleep, ignore-sigterm, connect, serve, probe)`,
    );
    process.exit(64);
}

/** One TCP connection attempt (2 s): `connected` or `failed <code>`. */
function tcpAttempt(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    const done = (outcome: string): void => {
      socket.destroy();
      resolve(outcome);
    };
    socket.once("connect", () => done("connected"));
    socket.once("timeout", () => done("failed ETIMEDOUT"));
    socket.once("error", (err: NodeJS.ErrnoException) => done(`failed ${err.code ?? err.message}`));
  });
}

/** One UDP datagram that must be answered within 1.5 s: `connected` or `failed <code>`. */
function udpAttempt(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createSocket("udp4");
    const done = (outcome: string): void => {
      clearTimeout(timer);
      socket.close();
      resolve(outcome);
    };
    const timer = setTimeout(() => done("failed ETIMEDOUT"), 1_500);
    // A connected socket hears the ICMP error a rejecting rule sends back.
    socket.once("error", (err: NodeJS.ErrnoException) => done(`failed ${err.code ?? err.message}`));
    socket.once("message", () => done("connected"));
    socket.connect(port, host, () => socket.send("ping"));
  });
}
