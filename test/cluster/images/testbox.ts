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
 *   serve PORT                       listens on PORT on all addresses, answers `ok` to each connection
 *
 * Each run starts by printing `started <verb> at <epoch ms>`; a handled SIGTERM prints
 * `received SIGTERM at <epoch ms>`.
 */
import { readFileSync } from "node:fs";
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
    const server = createServer((socket) => {
      socket.on("error", () => {}); // a tcpSocket probe resets its connection at once
      socket.end("ok\n");
    });
    server.listen(Number(args[0] ?? "8080"), "0.0.0.0", () => console.log(`listening on ${args[0]}`));
    process.on("SIGTERM", () => {
      console.log(`received SIGTERM at ${Date.now()}`);
      process.exit(0);
    });
    break;
  }
  default:
    console.error(`testbox: unknown verb "${verb}" (report, exit, sleep, ignore-sigterm, connect, serve)`);
    process.exit(64);
}
