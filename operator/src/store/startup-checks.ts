/**
 * What a long-running process checks before it uses the store (DESIGN §6): that its login is a
 * runtime login — not a superuser, not `gatehouse_owner`, not able to become it, not able to grant
 * itself roles — and that the schema is at the latest migration. Neither check changes anything: the
 * migrate program (`cli/gatehouse-migrate.ts`) is the only thing that migrates or creates roles.
 */
import { readdirSync } from "node:fs";
import type pg from "pg";
import { COMPONENTS, type Component } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import { MIGRATIONS_DIR, MIGRATIONS_TABLE } from "./migration-files.ts";
import { COMPONENT_ROLES, OPERATOR_ROLE, OWNER_ROLE } from "./roles.ts";

/** Where to read how the logins are set up; named by every refusal. */
const SEE = "see docs/upgrading.md";

/** How the process names the variable its URL came from, e.g. `DATABASE_URL`. */
export interface StartupCheckOptions {
  variable?: string;
  /**
   * The component the process runs as: its login must be a member of that component's role and of
   * no other's, so a gateway cannot start with the controller's login (which may write checkpoints).
   */
  component?: Component;
}

/**
 * Refuses a login the audit triggers would not bind. Errors: `forbidden`, one message each for a
 * superuser, the owner role itself, a login that may `SET ROLE gatehouse_owner` (a member of it), a
 * login with CREATEROLE (it may grant itself the owner role), and a login without the runtime
 * privileges (not a member of `gatehouse_operator`); `unavailable` when the roles do not exist yet (the
 * database was never migrated).
 */
export async function assertRuntimeLogin(pool: pg.Pool, options: StartupCheckOptions = {}): Promise<string> {
  const variable = options.variable ?? "DATABASE_URL";
  const found = await pool.query<{
    login: string;
    superuser: boolean;
    createrole: boolean;
    roles: boolean;
  }>(
    `SELECT r.rolname AS login, r.rolsuper AS superuser, r.rolcreaterole AS createrole,
            (SELECT count(*) = 2 FROM pg_catalog.pg_roles WHERE rolname IN ($1, $2)) AS roles
       FROM pg_catalog.pg_roles r WHERE r.rolname = current_user`,
    [OWNER_ROLE, OPERATOR_ROLE],
  );
  const me = found.rows[0];
  if (!me) throw new GatehouseError("internal", "current_user is not in pg_roles");
  const roles = options.component
    ? COMPONENT_ROLES[options.component]
    : "gatehouse_controller or gatehouse_gateway";
  const runtimeLogin = `a login that is a member of ${roles} (${SEE})`;
  if (me.superuser) {
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login ${me.login} is a superuser, whom the audit triggers do not bind: set ${variable} to ${runtimeLogin}`,
    );
  }
  if (me.login === OWNER_ROLE) {
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login is ${OWNER_ROLE}, the schema's owner, who may disable the audit triggers: set ${variable} to ${runtimeLogin}; only gatehouse-migrate connects as the owner`,
    );
  }
  if (!me.roles) {
    throw new GatehouseError(
      "unavailable",
      `the database of ${variable} has no roles ${OWNER_ROLE} and ${OPERATOR_ROLE}: it was never migrated; run gatehouse-migrate with DATABASE_OWNER_URL first (${SEE})`,
    );
  }
  const membership = await pool.query<{ owner: boolean; runtime: boolean }>(
    `SELECT pg_has_role(current_user, $1, 'MEMBER') OR pg_has_role(current_user, $1, 'USAGE') AS owner,
            pg_has_role(current_user, $2, 'USAGE') AS runtime`,
    [OWNER_ROLE, OPERATOR_ROLE],
  );
  const { owner, runtime } = membership.rows[0] ?? { owner: true, runtime: false };
  if (owner) {
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login ${me.login} may SET ROLE ${OWNER_ROLE} (it is a member), and so disable the audit triggers: set ${variable} to ${runtimeLogin}, or REVOKE ${OWNER_ROLE} FROM ${me.login}`,
    );
  }
  if (me.createrole) {
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login ${me.login} has CREATEROLE, so it may grant itself ${OWNER_ROLE}: set ${variable} to ${runtimeLogin}, or ALTER ROLE ${me.login} NOCREATEROLE`,
    );
  }
  if (!runtime) {
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login ${me.login} lacks the runtime privileges (it is not a member of ${OPERATOR_ROLE}): set ${variable} to ${runtimeLogin}`,
    );
  }
  if (options.component) await assertComponentRole(pool, me.login, variable, options.component);
  return me.login;
}

/** Refuses a login that is not a member of `component`'s role, or is also a member of another's. */
async function assertComponentRole(
  pool: pg.Pool,
  login: string,
  variable: string,
  component: Component,
): Promise<void> {
  const memberships = await pool.query<{ role: string; member: boolean }>(
    `SELECT role, pg_has_role(current_user, role, 'USAGE') AS member FROM unnest($1::text[]) AS role`,
    [COMPONENTS.map((c) => COMPONENT_ROLES[c])],
  );
  const held = new Set(memberships.rows.filter((row) => row.member).map((row) => row.role));
  const own = COMPONENT_ROLES[component];
  const foreign = [...held].filter((role) => role !== own);
  if (!held.has(own) || foreign.length > 0) {
    const problem = held.has(own)
      ? `is also a member of ${foreign.join(", ")}, another component's role`
      : `is not a member of ${own}`;
    throw new GatehouseError(
      "forbidden",
      `${variable}'s login ${login} ${problem}: the ${component} runs as a login of ${own} only (gatehouse-migrate creates one from ${component.toUpperCase()}_DATABASE_URL; ${SEE})`,
    );
  }
}

/** The migrations this code knows, oldest first, e.g. `["0001_executions", …]`. */
export function knownMigrations(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith(".sql"))
    .map((file) => file.slice(0, -".sql".length))
    .sort();
}

/**
 * Refuses a schema behind the latest migration this code knows. A schema ahead of it (a newer
 * version's migration, during a rolling upgrade or a rollback) is accepted: migrations only add
 * what older code does not use. Returns the applied migrations this code does not know.
 * Errors: `unavailable` naming the missing migrations and the migrate program.
 */
export async function assertSchemaCurrent(
  pool: pg.Pool,
  options: StartupCheckOptions = {},
): Promise<string[]> {
  const variable = options.variable ?? "DATABASE_URL";
  const known = knownMigrations();
  const fix = `run gatehouse-migrate with DATABASE_OWNER_URL first (the chart's migrate Job does; ${SEE})`;
  let applied: string[];
  try {
    const result = await pool.query<{ name: string }>(
      `SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY run_on, id`,
    );
    applied = result.rows.map((row) => row.name);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "42P01") {
      throw new GatehouseError("unavailable", `the database of ${variable} was never migrated: ${fix}`, {
        cause,
      });
    }
    if (code === "42501") {
      // The runtime roles may read pgmigrations from 0010_component_roles on: a schema from before it.
      throw new GatehouseError(
        "unavailable",
        `the schema of ${variable}'s database is behind this version (from before 0010_component_roles, ` +
          `which lets the runtime roles read ${MIGRATIONS_TABLE}): ${fix}`,
        { cause },
      );
    }
    throw cause;
  }
  const missing = known.filter((name) => !applied.includes(name));
  if (missing.length > 0) {
    throw new GatehouseError(
      "unavailable",
      `the schema of ${variable}'s database is behind this version: ${missing.length} migration(s) not applied ` +
        `(${missing.join(", ")}): ${fix}`,
    );
  }
  return applied.filter((name) => !known.includes(name));
}
