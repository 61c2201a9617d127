/**
 * The kit's HTTP calls to a running provider, each returning the status and the parsed JSON body (or
 * `undefined` when the body is not JSON) so the tests assert on what went over the wire.
 */
import type { InvokeRequest } from "../contract.ts";

/** An HTTP answer: status and JSON body. */
export interface Answer {
  status: number;
  body: unknown;
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body };
}

/** `GET url+path` with an optional bearer grant. */
export async function getJson(url: string, path: string, grant?: string): Promise<Answer> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (grant !== undefined) headers.authorization = `Bearer ${grant}`;
  return answerOf(await fetch(`${url}${path}`, { headers }));
}

/** `POST /v1/invoke` with a raw body text (to send malformed bodies too) and an optional bearer grant. */
export async function postInvokeText(url: string, body: string, grant?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (grant !== undefined) headers.authorization = `Bearer ${grant}`;
  return answerOf(await fetch(`${url}/v1/invoke`, { method: "POST", headers, body }));
}

/** `POST /v1/invoke` with an InvokeRequest as JSON. */
export function postInvoke(url: string, request: InvokeRequest, grant?: string): Promise<Answer> {
  return postInvokeText(url, JSON.stringify(request), grant);
}

/** `GET /v1/executions/{key}` (the key URL-encoded). */
export function getExecution(url: string, idempotencyKey: string, grant?: string): Promise<Answer> {
  return getJson(url, `/v1/executions/${encodeURIComponent(idempotencyKey)}`, grant);
}
