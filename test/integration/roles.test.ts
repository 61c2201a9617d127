/** The owner and runtime roles (DESIGN §6): created idempotently, owning and using the schema. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../operator/src/store/migrate.ts";
import { OPERATOR_ROLE, OWNER_ROLE } from "../../operator/src/store/roles.ts";
import { type FreshDatabase, freshDatabase } from "./fresh-database.ts";

describe("database roles", () => {
  let databases: FreshDatabase[];
  beforeAll(async () => {
    // Two databases migrating at once both ensure the same cluster-global roles.
    databases = await Promise.all([freshDatabase(), freshDatabase()]);
  });
  afterAll(async () => {
    await Promise.all((databases ?? []).map((db) => db.drop()));
  });

  it("migrates again without change once the roles and schema exist", async () => {
    for (const db of databases) expect(await migrate(db.url)).toEqual([]);
  });

  it("makes gatehouse_owner, which cannot log in, the owner of every table", async () => {
    const db = databases[0] as FreshDatabase;
    const owners = await db.admin.query(
      "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public' ORDER BY tableowner",
    );
    expect(owners.rows).toEqual([{ tableowner: OWNER_ROLE }]);
    const owner = await db.admin.query("SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", [OWNER_ROLE]);
    expect(owner.rows).toEqual([{ rolcanlogin: false }]);
  });

  it("grants the runtime role INSERT and SELECT on the audit tables and nothing more", async () => {
    const db = databases[0] as FreshDatabase;
    const privileges = await db.admin.query(
      `SELECT t AS "table", p AS privilege FROM unnest(ARRAY['audit_log', 'audit_checkpoints']) t,
              unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
        WHERE has_table_privilege($1, t, p) ORDER BY 1, 2`,
      [OPERATOR_ROLE],
    );
    expect(privileges.rows).toEqual([
      { table: "audit_checkpoints", privilege: "INSERT" },
      { table: "audit_checkpoints", privilege: "SELECT" },
      { table: "audit_log", privilege: "INSERT" },
      { table: "audit_log", privilege: "SELECT" },
    ]);
  });
});
