/**
 * A fresh, migrated Postgres database for a test: created with a random name on the server the
 * operator would use (DATABASE_URL's server, else the local one on 127.0.0.1:5432, else an embedded
 * one) and dropped afterwards, with three kinds of connection:
 *   - `admin`: the server's superuser (creates logins, terminates backends);
 *   - `owner`: runs as `gatehouse_owner`, which owns the tables (and so may disable their triggers);
 *   - `operator`: a login of this database's own that is a member of `gatehouse_controller`, so it has
 *     exactly the controller's runtime privileges, and no test changes a shared role's password;
 *   - `gatewayUrl`: a login of this database's own that is a member of `gatehouse_gateway`.
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import pg from "pg";
import {
  createPool,
  dropDatabase,
  ensureDatabase,
  LOCAL_SERVER_URL,
  withDatabase,
} from "../../operator/src/store/connection.ts";
import { startEmbeddedPostgres } from "../../operator/src/store/embedded.ts";
import { MIGRATIONS_DIR, migrate } from "../../operator/src/store/migrate.ts";
import {
  dropRuntimeLogin,
  ensureRuntimeLogin,
  OWNER_ROLE,
  runtimeLoginUrl,
} from "../../operator/src/store/roles.ts";
import { answers } from "../../operator/src/store/server-probe.ts";
import { storeTypeParsers } from "../../operator/src/store/sql-values.ts";

/**
 * The migrations from `first` to the latest, newest first: what `migrate(url, { direction: "down",
 * count })` reverts to undo `first`, so a test of one migration does not break when later ones are added.
 */
export function migrationsFrom(first: string): string[] {
  const names = readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith(".sql"))
    .map((file) => file.slice(0, -".sql".length))
    .sort();
  return names.filter((name) => name >= first).reverse();
}

/** A migrated throw-away database. */
export interface FreshDatabase {
  name: string;
  /** This database, as the superuser. */
  url: string;
  /** This database, as the controller's login. */
  operatorUrl: string;
  /** This database, as the gateway's login (a member of `gatehouse_gateway`). */
  gatewayUrl: string;
  /** The superuser: neither triggers nor REVOKE bind it. */
  admin: pg.Pool;
  /** Runs as `gatehouse_owner`, the tables' owner. */
  owner: pg.Pool;
  /** Runs as this database's controller login (a member of `gatehouse_controller`). */
  operator: pg.Pool;
  /** Another pool as the operator login — a second replica. Closed by `drop()`. */
  anotherOperatorPool(max?: number): pg.Pool;
  drop(): Promise<void>;
}

const OPERATOR_PASSWORD = "gatehouse-operator-test";

async function serverUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return withDatabase(process.env.DATABASE_URL, "postgres");
  if (await answers(LOCAL_SERVER_URL)) return LOCAL_SERVER_URL;
  return (await startEmbeddedPostgres()).serverUrl;
}

/** Creates, migrates and opens a database named `gh_test_<random hex>`. */
export async function freshDatabase(): Promise<FreshDatabase> {
  const server = await serverUrl();
  const name = `gh_test_${randomBytes(6).toString("hex")}`;
  const login = `${name}_operator`;
  const gatewayLogin = `${name}_gateway`;
  await ensureDatabase(server, name);
  const url = withDatabase(server, name);
  await migrate(url);
  const admin = createPool(url, { max: 2 });
  await ensureRuntimeLogin(admin, "controller", login, OPERATOR_PASSWORD);
  await ensureRuntimeLogin(admin, "gateway", gatewayLogin, OPERATOR_PASSWORD);
  const owner = new pg.Pool({
    connectionString: url,
    max: 2,
    types: storeTypeParsers,
    options: `-c role=${OWNER_ROLE}`,
  });
  // pg-pool's end() resolves before its clients' sockets close; DROP DATABASE … WITH (FORCE) in drop()
  // can then terminate one of them, which the pool reports as an error event: expected, not a failure.
  owner.on("error", () => {});
  const loginUrl = runtimeLoginUrl(url, login, OPERATOR_PASSWORD);
  const pools: pg.Pool[] = [createPool(loginUrl, { max: 4 })];
  return {
    name,
    url,
    operatorUrl: loginUrl,
    gatewayUrl: runtimeLoginUrl(url, gatewayLogin, OPERATOR_PASSWORD),
    admin,
    owner,
    operator: pools[0] as pg.Pool,
    anotherOperatorPool(max = 4) {
      const pool = createPool(loginUrl, { max });
      pools.push(pool);
      return pool;
    },
    async drop() {
      await Promise.all(pools.map((pool) => pool.end()));
      await owner.end();
      await admin.end();
      await dropDatabase(server, name);
      const serverPool = createPool(server, { max: 1 });
      try {
        await dropRuntimeLogin(serverPool, login);
        await dropRuntimeLogin(serverPool, gatewayLogin);
      } finally {
        await serverPool.end();
      }
    },
  };
}
