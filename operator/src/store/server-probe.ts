/** Probing whether a Postgres server is there, used to choose a database (see `connection.ts`). */
import pg from "pg";

/**
 * True when a Postgres server accepts a connection to `url` and answers `SELECT 1` within
 * `timeoutMs` (default 2000 ms). Never throws: any failure (refused, auth, timeout) is `false`.
 */
export async function answers(url: string, timeoutMs = 2000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
