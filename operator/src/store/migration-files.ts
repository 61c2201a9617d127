/**
 * Where the schema's migrations are and where applying them is recorded: what the components' startup
 * checks (startup-checks.ts) compare the database against. Apart from migrate.ts so that a component,
 * which never migrates, does not load node-pg-migrate (about 1.5 MiB of heap).
 */
import { fileURLToPath } from "node:url";

/** Directory of the migration files. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/** Table in which node-pg-migrate records applied migrations. */
export const MIGRATIONS_TABLE = "pgmigrations";
