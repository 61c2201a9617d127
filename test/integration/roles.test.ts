/**
 * The owner and runtime roles (DESIGN §6): created idempotently, owning and using the schema — and,
 * from the attacker's side, what a login of each component's runtime role may not do to the audit
 * tables, tried for real as that login.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../operator/src/store/migrate.ts";
import { COMPONENT_ROLES, OPERATOR_ROLE, OWNER_ROLE } from "../../operator/src/store/roles.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

/** The SQLSTATE `sql` fails with as the login of `url`, or "ok" when it succeeds. */
async function outcome(url: string, sql: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
    return "ok";
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end();
  }
}

/** Statements that would rewrite or silence the audit chain; each must be refused to a runtime login. */
function tamperings(table: "audit_log" | "audit_checkpoints"): string[] {
  const trigger = `${table}_append_only`;
  return [
    `UPDATE ${table} SET at_us = 0`,
    `DELETE FROM ${table}`,
    `TRUNCATE ${table}`,
    `ALTER TABLE ${table} ADD COLUMN note text`,
    `ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`,
    `ALTER TABLE ${table} DISABLE TRIGGER ALL`,
    `DROP TRIGGER ${trigger} ON ${table}`,
    `DROP TABLE ${table}`,
    `CREATE OR REPLACE FUNCTION gatehouse_refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
  ];
}

/** Ways a login could try to become the owner or gain a role. */
const ESCALATIONS = [
  `SET ROLE ${OWNER_ROLE}`,
  `GRANT ${OWNER_ROLE} TO CURRENT_USER`,
  "ALTER ROLE CURRENT_USER SUPERUSER",
  "ALTER ROLE CURRENT_USER CREATEROLE",
];

describe("database roles", () => {
  let databases: FreshDatabase[];
  beforeAll(async () => {
    // Two databases migrating at once both ensure the same cluster-global roles and memberships.
    databases = await Promise.all([freshDatabase(), freshDatabase()]);
  });
  afterAll(async () => {
    await Promise.all((databases ?? []).map((db) => db.drop()));
  });
  const db = () => databases[0] as FreshDatabase;

  it("migrates again without change once the roles and schema exist", async () => {
    for (const each of databases) expect(await migrate(each.url)).toEqual([]);
  });

  it("makes gatehouse_owner, which cannot log in, the owner of every table", async () => {
    const owners = await db().admin.query(
      "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public' ORDER BY tableowner",
    );
    expect(owners.rows).toEqual([{ tableowner: OWNER_ROLE }]);
    const owner = await db().admin.query("SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", [OWNER_ROLE]);
    expect(owner.rows).toEqual([{ rolcanlogin: false }]);
  });

  it("makes both component roles NOLOGIN members of gatehouse_operator, and neither a member of the owner", async () => {
    const roles = await db().admin.query(
      `SELECT rolname AS role, rolcanlogin AS login, rolsuper AS superuser, rolcreaterole AS createrole,
              pg_has_role(rolname, $1, 'MEMBER') AS operator, pg_has_role(rolname, $2, 'MEMBER') AS owner
         FROM pg_roles WHERE rolname = ANY($3) ORDER BY 1`,
      [OPERATOR_ROLE, OWNER_ROLE, Object.values(COMPONENT_ROLES)],
    );
    expect(roles.rows).toEqual([
      {
        role: "gatehouse_controller",
        login: false,
        superuser: false,
        createrole: false,
        operator: true,
        owner: false,
      },
      {
        role: "gatehouse_gateway",
        login: false,
        superuser: false,
        createrole: false,
        operator: true,
        owner: false,
      },
    ]);
  });

  it("grants INSERT on the audit chain to both components and INSERT on its checkpoints to the controller only", async () => {
    const privileges = await db().admin.query(
      `SELECT r AS role, t AS "table", p AS privilege
         FROM unnest($1::text[]) r, unnest(ARRAY['audit_log', 'audit_checkpoints']) t,
              unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
        WHERE has_table_privilege(r, t, p) ORDER BY 1, 2, 3`,
      [[OPERATOR_ROLE, COMPONENT_ROLES.gateway, COMPONENT_ROLES.controller]],
    );
    const of = (role: string) =>
      privileges.rows.filter((row) => row.role === role).map((row) => `${row.table} ${row.privilege}`);
    expect(of(OPERATOR_ROLE)).toEqual(["audit_checkpoints SELECT", "audit_log INSERT", "audit_log SELECT"]);
    expect(of(COMPONENT_ROLES.gateway)).toEqual([
      "audit_checkpoints SELECT",
      "audit_log INSERT",
      "audit_log SELECT",
    ]);
    expect(of(COMPONENT_ROLES.controller)).toEqual([
      "audit_checkpoints INSERT",
      "audit_checkpoints SELECT",
      "audit_log INSERT",
      "audit_log SELECT",
    ]);
  });

  for (const component of ["gateway", "controller"] as const) {
    const url = () => (component === "gateway" ? db().gatewayUrl : db().operatorUrl);
    for (const table of ["audit_log", "audit_checkpoints"] as const) {
      it.each(tamperings(table))(`refuses the ${component}'s login: %s`, async (sql) => {
        // 42501 insufficient_privilege: no grant, or "must be owner" for DDL on the owner's objects.
        expect(await outcome(url(), sql)).toBe("42501");
      });
    }
    it.each(ESCALATIONS)(`refuses the ${component}'s login: %s`, async (sql) => {
      expect(await outcome(url(), sql)).toBe("42501");
    });
    it(`lets the ${component}'s login read both audit tables (the control for the refusals: it connects and sees them)`, async () => {
      expect(await outcome(url(), "SELECT count(*) FROM audit_log")).toBe("ok");
      expect(await outcome(url(), "SELECT count(*) FROM audit_checkpoints")).toBe("ok");
    });
  }

  it("refuses the gateway's login a checkpoint, and takes the controller's", async () => {
    const checkpoint = (seq: number) =>
      `INSERT INTO audit_checkpoints (seq, head_hash, at_us) VALUES (${seq}, decode(repeat('00', 32), 'hex'), 1)`;
    expect(await outcome(db().gatewayUrl, checkpoint(0))).toBe("42501");
    expect(await outcome(db().operatorUrl, checkpoint(0))).toBe("ok");
    const rows = await db().admin.query("SELECT seq FROM audit_checkpoints");
    expect(rows.rows).toEqual([{ seq: 0 }]);
  });
});
