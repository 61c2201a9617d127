/**
 * The owner and runtime roles (DESIGN §6): created idempotently, owning and using the schema — and,
 * from the attacker's side, what a login of each component's runtime role may not do to the audit
 * tables, tried for real as that login.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditKind, GATEWAY_AUDIT_KINDS, sealAuditRecord } from "../../operator/src/core/audit.ts";
import type { AuditEntry } from "../../operator/src/core/ports.ts";
import { readHead } from "../../operator/src/store/audit/append.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { AUDIT_COLUMN_LIST, auditRowValues } from "../../operator/src/store/audit/row.ts";
import { createPool } from "../../operator/src/store/connection.ts";
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
    ...(table === "audit_log"
      ? [
          "ALTER TABLE audit_log DISABLE TRIGGER audit_log_gateway_kinds",
          "DROP TRIGGER audit_log_gateway_kinds ON audit_log",
          `CREATE OR REPLACE FUNCTION gatehouse_audit_kind_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
        ]
      : []),
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

  describe("the kinds each component's login may append", () => {
    const pools: pg.Pool[] = [];
    const auditAs = (url: string) => {
      const pool = createPool(url, { max: 2 });
      pools.push(pool);
      return createPostgresAuditLog(pool);
    };
    afterAll(async () => {
      await Promise.all(pools.map((pool) => pool.end()));
    });
    const entry = (kind: string, payload: AuditEntry["payload"] = {}): AuditEntry => ({
      kind,
      actor: "attacker",
      outcome: "success",
      sessionUid: "session-uid",
      executionId: "execution-id",
      atMicros: 1_000_000,
      payload: { approval: "team/approval-x", ...payload },
    });
    /** "ok" when `entry` is appended, else the SQLSTATE and message it is refused with. */
    const appendOutcome = async (audit: ReturnType<typeof auditAs>, appended: AuditEntry) => {
      try {
        await audit.append(appended);
        return "ok";
      } catch (error) {
        const { code, message } = error as { code?: string; message: string };
        return `${code}: ${message}`;
      }
    };
    const emitted: string[] = Object.values(AuditKind);
    const notGateways = [...emitted.filter((kind) => !GATEWAY_AUDIT_KINDS.includes(kind)), "custom.kind"];
    const autoStart = { approval: null, capability: "crm.update", argumentsDigest: "d" };

    it.each(notGateways)(
      "refuses the gateway's login a record of kind %s, naming the kind and the role",
      async (kind) => {
        const result = await appendOutcome(auditAs(db().gatewayUrl), entry(kind));
        expect(result).toMatch(
          /^42501: gatehouse_gateway \(login gh_test_\w+_gateway\) may not append audit records of kind /,
        );
        expect(result).toContain(`kind ${kind}`);
      },
    );

    it.each([...GATEWAY_AUDIT_KINDS])("takes a record of kind %s from the gateway's login", async (kind) => {
      const payload = kind === AuditKind.executionStarted ? autoStart : {};
      expect(await appendOutcome(auditAs(db().gatewayUrl), entry(kind, payload))).toBe("ok");
    });

    it.each([...emitted, "custom.kind"])(
      "takes a record of kind %s from the controller's login",
      async (kind) => {
        expect(await appendOutcome(auditAs(db().operatorUrl), entry(kind))).toBe("ok");
      },
    );

    it("refuses the gateway's login an execution.started that names an Approval or cites its approval record", async () => {
      const audit = auditAs(db().gatewayUrl);
      const named = await appendOutcome(audit, entry(AuditKind.executionStarted, { approval: "approval-x" }));
      expect(named).toMatch(/^42501: .* may not append an execution.started that names an Approval$/);
      const cited = await appendOutcome(
        audit,
        entry(AuditKind.executionStarted, { ...autoStart, approvalRecord: { seq: 1, hash: "00" } }),
      );
      expect(cited).toMatch(/^42501: .* may not append an execution.started that names an Approval$/);
    });

    it("refuses the gateway's login a refused kind after SET ROLE to the role that holds the grant", async () => {
      const pool = createPool(db().gatewayUrl, { max: 1 });
      pools.push(pool);
      const client = await pool.connect();
      try {
        await client.query(`SET ROLE ${OPERATOR_ROLE}`);
        const sealed = sealAuditRecord(await readHead(client), entry(AuditKind.approvalApproved));
        const insert = client.query(
          `INSERT INTO audit_log (${AUDIT_COLUMN_LIST}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          auditRowValues(sealed),
        );
        await expect(insert).rejects.toMatchObject({
          code: "42501",
          message: expect.stringContaining("may not append audit records of kind approval.approved"),
        });
      } finally {
        client.release(true);
      }
    });

    it("refuses the gateway's login a record whose hashed kind is not its kind column", async () => {
      const pool = createPool(db().gatewayUrl, { max: 1 });
      pools.push(pool);
      const client = await pool.connect();
      try {
        const sealed = sealAuditRecord(await readHead(client), entry(AuditKind.approvalApproved));
        const insert = client.query(
          `INSERT INTO audit_log (${AUDIT_COLUMN_LIST}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          auditRowValues({ ...sealed, kind: AuditKind.denied }),
        );
        await expect(insert).rejects.toMatchObject({
          code: "42501",
          message: expect.stringContaining("of kind approval.approved under kind column invoke.denied"),
        });
      } finally {
        client.release(true);
      }
    });
  });
});
