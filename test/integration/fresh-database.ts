/**
 * A fresh, migrated Postgres database per test: created with a random name on the server the operator
 * would use (DATABASE_URL's server, else the local one on 127.0.0.1:5432, else an embedded one) and
 * dropped afterwards. Offers an owner pool (migrations, tampering) and a pool connected as
 * `gatehouse_operator` (what the operator really runs as).
 */
import { randomBytes } from "node:crypto";
import type pg from "pg";
import {
  createPool,
  dropDatabase,
  ensureDatabase,
  LOCAL_SERVER_URL,
  withDatabase,
} from "../../operator/src/store/connection.ts";
import { startEmbeddedPostgres } from "../../operator/src/store/embedded.ts";
import { migrate } from "../../operator/src/store/migrate.ts";
import { enableOperatorLogin, operatorUrl } from "../../operator/src/store/operator-role.ts";
import { answers } from "../../operator/src/store/server-probe.ts";

/** A migrated throw-away database. */
export interface FreshDatabase {
  name: string;
  url: string;
  /** Connected as the owner (a superuser locally): triggers and REVOKE do not bind it. */
  owner: pg.Pool;
  /** Connected as `gatehouse_operator`. */
  operator: pg.Pool;
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
  await ensureDatabase(server, name);
  const url = withDatabase(server, name);
  await migrate(url);
  const owner = createPool(url, { max: 4 });
  await enableOperatorLogin(owner, OPERATOR_PASSWORD);
  const operator = createPool(operatorUrl(url, OPERATOR_PASSWORD), { max: 4 });
  return {
    name,
    url,
    owner,
    operator,
    async drop() {
      await operator.end();
      await owner.end();
      await dropDatabase(server, name);
    },
  };
}
