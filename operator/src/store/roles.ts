/**
 * The database roles of DESIGN §6, created before any migration runs:
 *   - `gatehouse_owner` (NOLOGIN) owns the schema. Migrations run as it (`SET ROLE`, see `migrate.ts`),
 *     so it owns every table, and REVOKE and the append-only triggers bind everyone else;
 *   - `gatehouse_operator` (NOLOGIN), the runtime privileges both components share: INSERT and SELECT
 *     on `audit_log`, SELECT on `audit_checkpoints` and nothing more there; SELECT, INSERT and UPDATE on
 *     `executions` and `budget_reservations`, whose triggers guard the state transitions; SELECT and
 *     INSERT on `session_events`; SELECT on `pgmigrations` (the start-up schema check);
 *   - `gatehouse_gateway` and `gatehouse_controller` (NOLOGIN), one per component, both members of
 *     `gatehouse_operator`; only the controller may INSERT into `audit_checkpoints`, and a login of the
 *     gateway's (and not the controller's) appends only the invoke path's kinds to `audit_log`
 *     (`GATEWAY_AUDIT_KINDS`; migration 0011's trigger, which judges `session_user`).
 * Roles and memberships are cluster-global, so they are created idempotently, tolerating another
 * database's migration creating them at the same moment; table grants are in the migrations.
 * Triggers and REVOKE do not bind a superuser or the table owner, which is why no long-running
 * process connects as either (`startup-checks.ts` refuses them).
 *
 * Credentials: each component gets a login role that is a member of its component role
 * ({@link ensureRuntimeLogin}, which the migrate program runs for the logins it is given; the demo and
 * e2e environment give it per-database logins with a random password).
 */
import pg from "pg";
import { COMPONENTS, type Component } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";

/** The role that owns the schema; migrations run as it. */
export const OWNER_ROLE = "gatehouse_owner";

/** The runtime privileges both components share: INSERT/SELECT on the audit chain, no UPDATE/DELETE/TRUNCATE. */
export const OPERATOR_ROLE = "gatehouse_operator";

/** The runtime role of each component: a member of {@link OPERATOR_ROLE}; the controller also checkpoints. */
export const COMPONENT_ROLES: Readonly<Record<Component, string>> = {
  gateway: "gatehouse_gateway",
  controller: "gatehouse_controller",
};

/** SQLSTATEs of losing a race on a cluster-global catalog row (role, membership, grant). */
const CONCURRENT_CATALOG_CHANGE = new Set([
  "42710", // duplicate_object: the role was created by someone else since we looked
  "23505", // unique_violation on pg_authid: same
  "XX000", // "tuple concurrently updated": two sessions altered the same role or ACL
  "40001", // serialization_failure
]);

/**
 * Makes sure the roles exist, that both component roles are members of `gatehouse_operator`, that
 * the connected user may `SET ROLE gatehouse_owner`, and that the owner may create objects in schema
 * `public` (Postgres 15 no longer grants CREATE there to PUBLIC).
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
  const componentRoles = COMPONENTS.map((component) => COMPONENT_ROLES[component]);
  for (const role of [OWNER_ROLE, OPERATOR_ROLE, ...componentRoles]) {
    if (user.name === role) continue;
    await ensureRole(client, role, user.superuser || user.createrole, user.name);
  }
  for (const role of componentRoles) {
    await grantIfMissing(
      client,
      `SELECT pg_has_role('${role}', '${OPERATOR_ROLE}', 'MEMBER') AS ok`,
      `GRANT ${OPERATOR_ROLE} TO ${role}`,
      `${role} is not a member of ${OPERATOR_ROLE}`,
    );
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

const LOGIN_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Lets only `logins` and the connected user connect to the current database: the component roles are
 * cluster-global, so without this a login of another Gatehouse database on the same server, a member of
 * the same `gatehouse_gateway`, would read (and append to) this one's audit chain and transcripts.
 * PUBLIC keeps CONNECT on no Gatehouse database; other clients are granted it by name
 * (`GRANT CONNECT ON DATABASE … TO …`). A user that does not own the database may neither revoke nor
 * grant, which Postgres only warns about: it then changes nothing. Idempotent and safe to run concurrently.
 */
export async function restrictDatabaseConnect(
  admin: pg.ClientBase,
  logins: readonly string[],
): Promise<void> {
  const found = await admin.query<{ name: string }>("SELECT current_database() AS name");
  const database = pg.escapeIdentifier(found.rows[0]!.name);
  const grantees = [...logins.map((login) => pg.escapeIdentifier(login)), "CURRENT_USER"].join(", ");
  await retryConcurrentCatalogChange(async () => {
    await admin.query(`REVOKE CONNECT ON DATABASE ${database} FROM PUBLIC`);
    await admin.query(`GRANT CONNECT ON DATABASE ${database} TO ${grantees}`);
  });
}

/**
 * Makes `login` a login role that is a member of `component`'s runtime role (so it inherits exactly
 * that component's privileges): created with `password` (none: no password, for trust or certificate
 * authentication) when missing, granted the membership when it
 * exists without it (an existing login's password is left alone). Run as a role with CREATEROLE.
 * Returns what it did. Idempotent and safe to run concurrently.
 * Errors: `invalid_arguments` for a name outside `[a-z_][a-z0-9_]{0,62}` or a login that is the owner
 * role, a superuser, has CREATEROLE or is a member of `gatehouse_owner` (the start-up checks would
 * refuse it anyway);
 * `forbidden` naming the statement when the connected user may not create or grant; pg errors otherwise.
 */
export async function ensureRuntimeLogin(
  admin: pg.ClientBase | pg.Pool,
  component: Component,
  login: string,
  password: string | undefined,
): Promise<"created" | "granted" | "unchanged"> {
  if (!LOGIN_NAME.test(login)) {
    throw new GatehouseError(
      "invalid_arguments",
      `login role ${JSON.stringify(login)} must match [a-z_][a-z0-9_]{0,62}`,
    );
  }
  const role = COMPONENT_ROLES[component];
  let outcome: "created" | "granted" | "unchanged" = "unchanged";
  try {
    await retryConcurrentCatalogChange(async () => {
      const found = await admin.query<{
        superuser: boolean;
        createrole: boolean;
        owner: boolean;
        member: boolean;
      }>(
        `SELECT rolsuper AS superuser, rolcreaterole AS createrole, pg_has_role(rolname, $2, 'MEMBER') AS owner,
                pg_has_role(rolname, $3, 'MEMBER') AS member
           FROM pg_catalog.pg_roles WHERE rolname = $1`,
        [login, OWNER_ROLE, role],
      );
      const existing = found.rows[0];
      if (!existing) {
        const withPassword = password ? ` PASSWORD ${pg.escapeLiteral(password)}` : "";
        await admin.query(
          `CREATE ROLE ${pg.escapeIdentifier(login)} LOGIN${withPassword} INHERIT IN ROLE ${pg.escapeIdentifier(role)}`,
        );
        outcome = "created";
        return;
      }
      if (login === OWNER_ROLE || existing.superuser || existing.owner || existing.createrole) {
        const what = existing.superuser
          ? "a superuser, whom the audit triggers do not bind"
          : existing.createrole
            ? "a role with CREATEROLE, which may grant itself the owner role"
            : `${OWNER_ROLE} or a member of it, who may disable the audit triggers`;
        throw new GatehouseError(
          "invalid_arguments",
          `login role ${login} is ${what}; give the ${component} a login of its own`,
        );
      }
      if (existing.member) return;
      await admin.query(`GRANT ${pg.escapeIdentifier(role)} TO ${pg.escapeIdentifier(login)}`);
      outcome = "granted";
    });
  } catch (cause) {
    if ((cause as { code?: string }).code !== "42501") throw cause;
    throw new GatehouseError(
      "forbidden",
      `may not create login role ${login} or grant it ${role}; run as an administrator: ` +
        `CREATE ROLE ${login} LOGIN PASSWORD '…' IN ROLE ${role}`,
      { cause },
    );
  }
  return outcome;
}

/** Drops the login role `login` if it exists (the counterpart of {@link ensureRuntimeLogin}). */
export async function dropRuntimeLogin(admin: pg.Pool, login: string): Promise<void> {
  const exists = await admin.query("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", [login]);
  if (exists.rowCount === 0) return;
  // Its CONNECT on databases (restrictDatabaseConnect) would keep DROP ROLE from succeeding; DROP OWNED
  // revokes privileges on shared objects too, and a login owns nothing.
  await admin.query(`DROP OWNED BY ${pg.escapeIdentifier(login)}`);
  await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(login)}`);
}

/** `serverUrl` with its user replaced by `login` and its password by `password` (URL-encoded). */
export function runtimeLoginUrl(serverUrl: string, login: string, password: string): string {
  const url = new URL(serverUrl);
  url.username = login;
  url.password = encodeURIComponent(password);
  return url.toString();
}
