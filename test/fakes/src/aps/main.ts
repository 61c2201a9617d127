/**
 * Runs the fake APS as a process:
 *   node test/fakes/src/aps/main.ts --host 10.0.0.1 --port 18081 --state-file /var/lib/aps/state.json
 * (defaults: env HOST or 127.0.0.1, env PORT or 18081, env APS_STATE_FILE or memory only). Prints one
 * JSON line `{"url": …}` once listening. With a state file a restart keeps plans, publishes and keyed
 * answers.
 */
import { parseArgs } from "node:util";
import { startFakeAps } from "./server.ts";

const { values } = parseArgs({
  options: { host: { type: "string" }, port: { type: "string" }, "state-file": { type: "string" } },
});
const stateFile = values["state-file"] ?? process.env.APS_STATE_FILE;
const aps = await startFakeAps({
  host: values.host ?? process.env.HOST ?? "127.0.0.1",
  port: Number(values.port ?? process.env.PORT ?? 18081),
  ...(stateFile ? { stateFile } : {}),
});
console.log(JSON.stringify({ msg: "fake APS listening", url: aps.url, stateFile: stateFile ?? null }));
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void aps.close().then(() => process.exit(0));
  });
}
