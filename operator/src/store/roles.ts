/**
 * The two database roles of DESIGN §6, created before any migration runs:
 *   - `gatehouse_owner` (NOLOGIN) owns the schema. Migrations run as it (`SET ROLE`, see `migrate.ts`),
 *     so it owns every table, and REVOKE and the append-only triggers bind everyone else;
 *   - `gatehouse_operator` (NOLOGIN) is what the operator runs as: the migrations grant it INSERT and
 *     SELECT on the audit tables and nothing more there; SELECT, INSERT and UPDATE on `executions`
 *     and `budget_reservations`, whose triggers guard the state transitions; SELECT and INSERT on
 *     `session_events`.
 * Roles are cluster-global, so they are created idempotently, tolerating another database's migration
 * creating them at the same moment. Triggers and REVOKE do not bind a superuser or the table owner
 * (NOTES "Postgres"), which is why the operator never connects as either.
 *
 * Credentials are provisioned separately: production gives the operator a login role that is a
 * member of `gatehouse_operator` ({@link createOperatorLogin} shows the statement); local clusters let
 * `gatehouse_operator` itself log in ({@link enableOperatorLogin}).
 */
import pg from "pg";
import { GatehouseError } from "../core/errors.ts";

/** The role that owns the schema; migrations run as it. */
export const OWNER_ROLE = "gatehouse_owner";

/** The role the operator runs as: INSERT/SELECT on the audit tables, no UPDATE/DELETE/TRUNCATE. */
export const OPERATOR_ROLE = "gatehouse_operator";

/** SQLSTATEs of losing a race on a cluster-global catalog row (role, membership, grant). */
const CONCURRENT_CATALOG_CHANGE = new Set([
  "42710", // duplicate_object: the role was created by someone else since we looked
  "23505", // unique_violation on pg_authid: same
  "XX000", // "tuple concurrently updated": two sessions altered the same role or ACL
  "40001", // serialization_failure
]);

/**
 * Makes sure both roles exist, that the connected user may `SET ROLE gatehouse_owner`, and that the
 * owner may create objects in schema `public` (Postgres 15 no longer grants CREATE there to PUBLIC).
 * Run it on the migrating connection before `SET ROLE`. Idempotent and safe to run concurrently.
 * Errors: `GatehouseError("forbidden")` naming the missing privilege when the connected user can
 * neither find nor create a role, nor grant what is missing; other pg errors propagate.
 */
export async function ensureRoles(client: pg.ClientBase): Promise<void> {
  const me = await client.query<{ name: string; superuser: boolean; createrole: boolean }>(
    `SELECT rolname AS name, rolsuper AS superuser, rolcreaterole AS createrole
       FROM pg_catalog.pg_roles WHERE rolname = current_user`,
  );
  const user = me.rows[0];
  if (!user) throw new GatehouseError("internal", "current_user is not in pg_roles");
  for (const role of [OWNER_ROLE, OPERATOR_ROLE]) {
    if (user.name === role) continue;
    await ensureRole(client, role, user.superuser || user.createrole, user.name);
  }
  if (!user.superuser && user.name !== OWNER_ROLE) {
    await grantIfMissing(
      client,
      `SELECT pg_has_role(current_user, '${OWNER_ROLE}', 'MEMBER') AS ok`,
      `GRANT ${OWNER_ROLE} TO ${pg.escapeIdentifier(user.name)}`,
      `${user.name} may not SET ROLE ${OWNER_ROLE}`,
    );
  }
  await grantIfMissing(
    client,
    `SELECT has_schema_privilege('${OWNER_ROLE}', 'public', 'CREATE') AS ok`,
    `GRANT USAGE, CREATE ON SCHEMA public TO ${OWNER_ROLE}`,
    `${OWNER_ROLE} may not create tables in schema public`,
  );
  await grantIfMissing(
    client,
    `SELECT has_schema_privilege('${OPERATOR_ROLE}', 'public', 'USAGE') AS ok`,
    `GRANT USAGE ON SCHEMA public TO ${OPERATOR_ROLE}`,
    `${OPERATOR_ROLE} may not use schema public`,
  );
}

async function ensureRole(
  client: pg.ClientBase,
  role: string,
  mayCreate: boolean,
  user: string,
): Promise<void> {
  const exists = async () =>
    ((await client.query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", [role])).rowCount ?? 0) > 0;
  if (await exists()) return;
  if (!mayCreate) {
    throw new GatehouseError(
      "forbidden",
      `role ${role} does not exist and ${user} may not create it; ` +
        `create it once as an administrator: CREATE ROLE ${role} NOLOGIN`,
    );
  }
  await retryConcurrentCatalogChange(async () => {
    if (!(await exists())) await client.query(`CREATE ROLE ${pg.escapeIdentifier(role)} NOLOGIN`);
  });
}

async function grantIfMissing(client: pg.ClientBase, check: string, grant: string, problem: string) {
  if ((await client.query<{ ok: boolean }>(check)).rows[0]?.ok) return;
  try {
    await retryConcurrentCatalogChange(async () => {
      if (!(await client.query<{ ok: boolean }>(check)).rows[0]?.ok) await client.query(grant);
    });
  } catch (cause) {
    if ((cause as { code?: string }).code !== "42501") throw cause;
    throw new GatehouseError("forbidden", `${problem}; run as an administrator: ${grant}`, { cause });
  }
}

/** Runs `change`, retrying (up to 5 attempts) when it lost a race on a cluster-global catalog row. */
async function retryConcurrentCatalogChange(change: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await change();
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === undefined || !CONCURRENT_CATALOG_CHANGE.has(code) || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

/**
 * Lets `gatehouse_operator` itself log in with `password` (local clusters; run as a role with
 * CREATEROLE, e.g. the local superuser). The password is cluster-global: every database on the server
 * shares it. Errors: pg errors propagate.
 */
export async function enableOperatorLogin(admin: pg.Pool, password: string): Promise<void> {
  const sql = `ALTER ROLE ${pg.escapeIdentifier(OPERATOR_ROLE)} LOGIN PASSWORD ${pg.escapeLiteral(password)}`;
  await retryConcurrentCatalogChange(async () => {
    await admin.query(sql);
  });
}

/**
 * Creates the login role `login` as a member of `gatehouse_operator` (it inherits exactly the
 * runtime privileges), unless it exists. This is how to give one operator deployment its own
 * credentials without touching the shared role. Run as a role with CREATEROLE.
 * Errors: `invalid_arguments` for a name outside `[a-z_][a-z0-9_]{0,62}`; pg errors otherwise.
 */
export async function createOperatorLogin(admin: pg.Pool, login: string, password: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(login)) {
    throw new GatehouseError(
      "invalid_arguments",
      `login role ${JSON.stringify(login)} must match [a-z_][a-z0-9_]{0,62}`,
    );
  }
  await retryConcurrentCatalogChange(async () => {
    const found = await admin.query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", [login]);
    if (found.rowCount) return;
    await admin.query(
      `CREATE ROLE ${pg.escapeIdentifier(login)} LOGIN PASSWORD ${pg.escapeLiteral(password)} ` +
        `INHERIT IN ROLE ${pg.escapeIdentifier(OPERATOR_ROLE)}`,
    );
  });
}

/** Drops the login role `login` if it exists (the counterpart of {@link createOperatorLogin}). */
export async function dropOperatorLogin(admin: pg.Pool, login: string): Promise<void> {
  await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(login)}`);
}

/** `serverUrl` with the user and password replaced by `user` (default `gatehouse_operator`) and `password`. */
export function operatorUrl(serverUrl: string, password: string, user: string = OPERATOR_ROLE): string {
  const url = new URL(serverUrl);
  url.username = user;
  url.password = encodeURIComponent(password);
  return url.toString();
}
