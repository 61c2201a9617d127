/**
 * `make logs POD=<namespace>/<name> [CONTAINER=<name>]`: prints the container logs the local node wrote
 * for that pod (`.run/cluster-<N>/pods/<namespace>_<name>_<uid>/logs/<container>.log`, kept after the pod
 * is deleted), each under a `==> <file> <==` header. When several pods of that name exist (restarts of a
 * Deployment's pod name, several harness instances), the most recently written one is printed and the
 * others are listed. Exits 2 on a malformed argument, 1 when no logs are found.
 *
 *   node test/cluster/src/print-logs.ts plant-a/my-pod [container]
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./paths.ts";

const [target = "", container = process.env.CONTAINER ?? ""] = process.argv.slice(2);
const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(target);
if (!match) {
  console.error(`usage: make logs POD=<namespace>/<name> [CONTAINER=<name>] (got "${target}")`);
  process.exit(2);
}
const [, namespace, , name] = match;
const prefix = `${namespace}_${name}_`;
const runRoot = join(REPO_ROOT, ".run");

const candidates = (existsSync(runRoot) ? readdirSync(runRoot) : [])
  .filter((d) => d.startsWith("cluster-"))
  .flatMap((d) => {
    const pods = join(runRoot, d, "pods");
    if (!existsSync(pods)) return [];
    return readdirSync(pods)
      .filter((p) => p.startsWith(prefix) && existsSync(join(pods, p, "logs")))
      .map((p) => ({ dir: join(pods, p, "logs"), mtimeMs: statSync(join(pods, p, "logs")).mtimeMs }));
  })
  .sort((a, b) => b.mtimeMs - a.mtimeMs);

const newest = candidates[0];
if (!newest) {
  console.error(`no container logs for pod ${target} under ${runRoot}/cluster-*/pods/`);
  process.exit(1);
}
const files = readdirSync(newest.dir)
  .filter((f) => f.endsWith(".log") && (container === "" || f === `${container}.log`))
  .sort();
if (files.length === 0) {
  console.error(`pod ${target} has no log for container "${container}" in ${newest.dir}`);
  process.exit(1);
}
for (const file of files) {
  const path = join(newest.dir, file);
  process.stdout.write(`==> ${path} <==\n${readFileSync(path, "utf8")}\n`);
}
for (const older of candidates.slice(1)) console.error(`(older pod of that name: ${older.dir})`);
