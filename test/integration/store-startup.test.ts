/**
 * openStore never migrates and never runs as the owner (DESIGN §6): it refuses, each with its own
 * message naming DATABASE_URL and the fix, a superuser, the owner role itself, a login that may SET
 * ROLE gatehouse_owner, a login with CREATEROLE, and a schema behind the latest migration — each
 * tried for real as that login against real Postgres — and opens for the controller's runtime login.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropDatabase, ensureDatabase, withDatabase } from "../../operator/src/store/connection.ts";
import { migrate } from "../../operator/src/store/migrate.ts";
import { dropRuntimeLogin, OWNER_ROLE, runtimeLoginUrl } from "../../operator/src/store/roles.ts";
import { knownMigrations } from "../../operator/src/store/startup-checks.ts";
import { openStore } from "../../operator/src/store/store.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const PASSWORD = "gatehouse-startup-test";

describe("openStore", () => {
  let db: FreshDatabase;
  const logins: string[] = [];
  const databases: string[] = [];
  /** A login of this test's own on `db`, created by the superuser with `attributes`. */
  const login = async (suffix: string, attributes: string): Promise<string> => {
    const name = `${db.name}_${suffix}`;
    logins.push(name);
    await db.admin.query(`CREATE ROLE ${name} LOGIN PASSWORD '${PASSWORD}' ${attributes}`);
    return runtimeLoginUrl(db.url, name, PASSWORD);
  };
  const refusal = async (url: string) => {
    const error = await openStore({ url, checkpoints: false }).then(
      async (store) => {
        await store.stop();
        return undefined;
      },
      (e: unknown) => e as Error & { kind?: string },
    );
    expect(error, "openStore should refuse").toBeDefined();
    return error as Error & { kind?: string };
  };

  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const name of logins) await dropRuntimeLogin(db.admin, name).catch(() => {});
    const server = withDatabase(db.url, "postgres");
    for (const name of databases) await dropDatabase(server, name);
    await db?.drop();
  });

  it("opened as a component, refuses the other component's login and a login of both, naming the role", async () => {
    const gateway = await openStore({ url: db.gatewayUrl, component: "gateway", checkpoints: false });
    await gateway.stop();
    const asGateway = await openStore({ url: db.operatorUrl, component: "gateway", checkpoints: false }).then(
      async (store) => void (await store.stop()),
      (e: unknown) => e as Error & { kind?: string },
    );
    expect(asGateway).toMatchObject({ kind: "forbidden" });
    expect((asGateway as Error).message).toMatch(/is not a member of gatehouse_gateway/);
    const both = await login("both", "NOCREATEROLE");
    await db.admin.query(`GRANT gatehouse_gateway, gatehouse_controller TO ${db.name}_both`);
    const asController = await openStore({ url: both, component: "controller", checkpoints: false }).then(
      async (store) => void (await store.stop()),
      (e: unknown) => e as Error & { kind?: string },
    );
    expect(asController).toMatchObject({ kind: "forbidden" });
    expect((asController as Error).message).toMatch(/also a member of gatehouse_gateway/);
  });

  it("opens for the controller's runtime login, and takes a checkpoint with it", async () => {
    const store = await openStore({ url: db.operatorUrl, checkpoints: false });
    try {
      expect(store.login).toBe(`${db.name}_operator`);
      await store.audit.checkpoint();
    } finally {
      await store.stop();
    }
    const rows = await db.admin.query("SELECT count(*)::int AS n FROM audit_checkpoints");
    expect(rows.rows).toEqual([{ n: 1 }]);
  });

  it("refuses a superuser's URL, naming DATABASE_URL and the runtime login to use instead", async () => {
    const error = await refusal(db.url);
    expect(error.kind).toBe("forbidden");
    expect(error.message).toMatch(
      /^DATABASE_URL's login \S+ is a superuser, whom the audit triggers do not bind/,
    );
    expect(error.message).toContain("gatehouse_controller");
    expect(error.message).toContain("docs/upgrading.md");
  });

  it("refuses a session that is gatehouse_owner itself", async () => {
    const asOwner = `${db.url}?options=${encodeURIComponent(`-c role=${OWNER_ROLE}`)}`;
    const error = await refusal(asOwner);
    expect(error.kind).toBe("forbidden");
    expect(error.message).toMatch(/^DATABASE_URL's login is gatehouse_owner, the schema's owner/);
    expect(error.message).toContain("only gatehouse-migrate connects as the owner");
  });

  it("refuses a login that may SET ROLE gatehouse_owner (a member of it), even one that is also a runtime login", async () => {
    const url = await login("ownerish", `NOINHERIT IN ROLE ${OWNER_ROLE}, gatehouse_controller`);
    const error = await refusal(url);
    expect(error.kind).toBe("forbidden");
    expect(error.message).toMatch(/^DATABASE_URL's login \S+_ownerish may SET ROLE gatehouse_owner/);
    expect(error.message).toContain(`REVOKE gatehouse_owner FROM ${db.name}_ownerish`);
  });

  it("refuses a runtime login with CREATEROLE, which could grant itself the owner role", async () => {
    const url = await login("creator", "CREATEROLE IN ROLE gatehouse_controller");
    const error = await refusal(url);
    expect(error.kind).toBe("forbidden");
    expect(error.message).toMatch(/^DATABASE_URL's login \S+_creator has CREATEROLE/);
  });

  it("refuses a login that is no runtime login at all", async () => {
    const url = await login("stranger", "");
    const error = await refusal(url);
    expect(error.message).toMatch(
      /lacks the runtime privileges \(it is not a member of gatehouse_operator\)/,
    );
  });

  it("refuses a database that was never migrated, naming gatehouse-migrate", async () => {
    const name = `gh_test_${randomBytes(6).toString("hex")}`;
    databases.push(name);
    await ensureDatabase(withDatabase(db.url, "postgres"), name);
    const error = await refusal(
      runtimeLoginUrl(withDatabase(db.url, name), `${db.name}_operator`, "gatehouse-operator-test"),
    );
    expect(error.kind).toBe("unavailable");
    expect(error.message).toMatch(
      /^the database of DATABASE_URL was never migrated: run gatehouse-migrate with DATABASE_OWNER_URL/,
    );
  });

  it("refuses a schema behind the latest migration, and opens once it is migrated again", async () => {
    const latest = knownMigrations().at(-1);
    expect(await migrate(db.url, { direction: "down", count: 1 })).toEqual([latest]);
    const error = await refusal(db.operatorUrl);
    expect(error.kind).toBe("unavailable");
    expect(error.message).toMatch(/^the schema of DATABASE_URL's database is behind this version/);
    expect(error.message).toContain("run gatehouse-migrate");
    expect(await migrate(db.url)).toEqual([latest]);
    const store = await openStore({ url: db.operatorUrl, checkpoints: false });
    await store.stop();
  });
});
