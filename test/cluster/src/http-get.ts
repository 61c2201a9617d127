import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/** Options of {@link httpGet}. */
export type HttpGetOptions = {
  /** Abort the request after this many milliseconds. */
  timeoutMs: number;
  /** PEM CA bundle to trust for https. */
  ca?: string;
  /** Skip certificate verification (only for components with self-signed serving certificates). */
  insecure?: boolean;
  /** Sent as `Authorization: Bearer …`. */
  bearerToken?: string;
  headers?: Record<string, string>;
};

/** Status code and body text of a GET. */
export type HttpGetResult = { status: number; body: string };

/**
 * GETs `url` (http or https) and resolves with the status and body (first 64 KiB). Rejects on connection
 * errors and on timeout; any status code resolves. Keeps no connection alive.
 */
export function httpGet(url: string, options: HttpGetOptions): Promise<HttpGetResult> {
  const target = new URL(url);
  const request = target.protocol === "https:" ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { ...options.headers, connection: "close" };
  if (options.bearerToken) headers.authorization = `Bearer ${options.bearerToken}`;
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: "GET",
        headers,
        timeout: options.timeoutMs,
        ca: options.ca,
        rejectUnauthorized: !options.insecure,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          if (size < 64 * 1024) chunks.push(chunk);
          size += chunk.length;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out after ${options.timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}
