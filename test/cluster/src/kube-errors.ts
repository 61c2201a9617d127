import { ApiException } from "@kubernetes/client-node";

/** The HTTP status of a failed client-node call, or undefined for errors that are not API answers. */
export function apiStatusCode(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/**
 * The `reason` of the Kubernetes Status in a failed call's body (client-node 2.0 keeps the body as a
 * string, not a parsed Status), e.g. `AlreadyExists`, `NotFound`, `Conflict`.
 */
export function apiStatusReason(err: unknown): string | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = err.body;
  try {
    const parsed = (typeof body === "string" ? JSON.parse(body) : body) as { reason?: unknown };
    return typeof parsed?.reason === "string" ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `create`; an AlreadyExists (409) answer counts as success. */
export async function createIfAbsent(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (apiStatusCode(err) !== 409) throw err;
  }
}
