/**
 * Runs the scripted model as a process:
 *   node test/fakes/src/model/main.ts --host 10.0.0.1 --port 18080 [--scripts DIR]
 * (defaults: env HOST or 127.0.0.1, env PORT or 18080, env SCRIPTS_DIR or test/fakes/scripts).
 * Prints one JSON line `{"url": …}` (the OpenAI base URL) once listening; the requests it receives are
 * served at `GET <origin>/_recorded` (see server.ts).
 */
import { parseArgs } from "node:util";
import { defaultScriptsDir } from "./index.ts";
import { startScriptedModel } from "./server.ts";

const { values } = parseArgs({
  options: { host: { type: "string" }, port: { type: "string" }, scripts: { type: "string" } },
});
const model = await startScriptedModel({
  host: values.host ?? process.env.HOST ?? "127.0.0.1",
  port: Number(values.port ?? process.env.PORT ?? 18080),
  scriptsDir: values.scripts ?? process.env.SCRIPTS_DIR ?? defaultScriptsDir,
});
console.log(JSON.stringify({ msg: "scripted model listening", url: model.url }));
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void model.close().then(() => process.exit(0));
  });
}
