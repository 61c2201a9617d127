/**
 * The gateway's Postgres pool is as large as GATEWAY_POSTGRES_POOL_SIZE says (chart value
 * gateway.database.poolSize), opened as programs/common.ts opens it — the gateway's runtime login on a
 * real server: the server sees that many of the login's connections at once, and a caller beyond them
 * waits for one to be released instead of opening another.
 */
import type pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configFromEnvironment } from "../../operator/src/config.ts";
import { openStore, type Store } from "../../operator/src/store/store.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

/** Lets promise callbacks and pending I/O callbacks run once. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the gateway's pool size", () => {
  let db: FreshDatabase;

  // A database (and so a gateway login) per test: a closed pool's connections may linger a moment on
  // the server, and must not be counted as the next pool's.
  beforeEach(async () => {
    db = await freshDatabase();
  });
  afterEach(async () => {
    await db?.drop();
  });

  /** The store as the gateway opens it from `env` (programs/common.ts and programs/gateway.ts). */
  const openAsGateway = async (env: NodeJS.ProcessEnv): Promise<Store> => {
    const config = configFromEnvironment({ DATABASE_URL: db.gatewayUrl, ...env });
    return openStore({
      url: config.databaseUrl,
      component: "gateway",
      checkpoints: false,
      poolMax: config.gatewayPostgresPoolSize,
      // The readiness probe would take a connection of its own now and then; not this test's subject.
      probe: { intervalMs: 3_600_000 },
    });
  };

  /** The server's connections of the gateway's login to this database. */
  const serverConnections = async () => {
    const { rows } = await db.admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND datname = $2",
      [`${db.name}_gateway`, db.name],
    );
    return rows[0]!.n;
  };

  /** Holds `size` connections, then shows the next caller waits until one is released. */
  const holdsExactly = async (store: Store, size: number) => {
    const held: pg.PoolClient[] = await Promise.all(Array.from({ length: size }, () => store.pool.connect()));
    try {
      expect(await serverConnections()).toBe(size);
      let extra: pg.PoolClient | undefined;
      const waiting = store.pool.connect().then((client) => {
        extra = client;
        return client;
      });
      // pg-pool queues a caller of a full pool at once, and opens no connection for it.
      expect(store.pool.totalCount).toBe(size);
      expect(store.pool.waitingCount).toBe(1);
      expect(await serverConnections()).toBe(size);
      await settle();
      expect(extra).toBeUndefined();
      held.pop()!.release();
      (await waiting).release();
      expect(await serverConnections()).toBe(size);
    } finally {
      for (const client of held) client.release();
    }
  };

  it("opens as many connections as GATEWAY_POSTGRES_POOL_SIZE, and no more", async () => {
    const store = await openAsGateway({ GATEWAY_POSTGRES_POOL_SIZE: "3" });
    try {
      await holdsExactly(store, 3);
    } finally {
      await store.stop();
    }
  });

  it("keeps 10 when the variable is unset", async () => {
    const store = await openAsGateway({});
    try {
      await holdsExactly(store, 10);
    } finally {
      await store.stop();
    }
  });
});
