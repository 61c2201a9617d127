/**
 * The operator's own database role (DESIGN §6). Migrations create `gatehouse_operator` NOLOGIN with
 * INSERT/SELECT only on the audit tables; triggers and REVOKE do not bind a superuser or the table
 * owner (NOTES "Postgres"), so the operator must connect as this role for the append-only guarantee
 * to hold against its own bugs. Production provisions its credentials out of band (e.g. a Secret with
 * the operator's DATABASE_URL); local clusters and tests use {@link enableOperatorLogin}.
 */
import pg from "pg";

/** Name of the operator role created by migration 0004. */
export const OPERATOR_ROLE = "gatehouse_operator";

/**
 * Lets `gatehouse_operator` log in with `password` (run as a role with CREATEROLE, e.g. the local
 * superuser). Retries the "tuple concurrently updated" error two sessions altering the same
 * cluster-global role can raise. Errors: pg errors propagate.
 */
export async function enableOperatorLogin(owner: pg.Pool, password: string): Promise<void> {
  const sql = `ALTER ROLE ${pg.escapeIdentifier(OPERATOR_ROLE)} LOGIN PASSWORD ${pg.escapeLiteral(password)}`;
  for (let attempt = 1; ; attempt++) {
    try {
      await owner.query(sql);
      return;
    } catch (error) {
      const concurrent = (error as { code?: string }).code === "XX000" && /concurrently/.test(String(error));
      if (!concurrent || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

/** `ownerUrl` with the user and password replaced by the operator role's. */
export function operatorUrl(ownerUrl: string, password: string): string {
  const url = new URL(ownerUrl);
  url.username = OPERATOR_ROLE;
  url.password = encodeURIComponent(password);
  return url.toString();
}
