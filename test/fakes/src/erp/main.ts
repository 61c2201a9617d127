/**
 * Runs the fake ERP as a process: `node test/fakes/src/erp/main.ts --host 10.0.0.1 --port 18082`
 * (defaults: env HOST or 127.0.0.1, env PORT or 18082). Prints one JSON line `{"url": …}` once listening.
 */
import { parseArgs } from "node:util";
import { startFakeErp } from "./server.ts";

const { values } = parseArgs({
  options: { host: { type: "string" }, port: { type: "string" } },
});
const erp = await startFakeErp({
  host: values.host ?? process.env.HOST ?? "127.0.0.1",
  port: Number(values.port ?? process.env.PORT ?? 18082),
});
console.log(JSON.stringify({ msg: "fake ERP listening", url: erp.url }));
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void erp.close().then(() => process.exit(0));
  });
}
