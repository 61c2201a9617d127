/**
 * Worker threads that check pages' content while the verifying thread reads the next pages and walks
 * the chain. A record's content check (hash, bytes, RFC 8785 form, columns) needs no other record, so
 * pages go to the workers in turn and their answers are taken back in page order.
 */
import { Worker } from "node:worker_threads";
import type { ErrorKind } from "@gatehouse/provider-sdk";
import { GatehouseError } from "../../core/errors.ts";
import type { CheckedPage, RawAuditRow } from "./verify-rows.ts";

/** A page sent to a worker. */
export interface CheckRequest {
  id: number;
  rows: RawAuditRow[];
}

/** A worker's answer to one page. */
export type CheckReply =
  | { id: number; page: CheckedPage }
  | { id: number; error: { kind: ErrorKind; message: string } };

interface Waiting {
  resolve: (page: CheckedPage) => void;
  reject: (error: Error) => void;
}

/** A fixed set of content-checking workers; {@link close} ends them. */
export class ContentCheckers {
  private readonly workers: Worker[];
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private closing = false;

  /** Starts `count` (≥ 1) workers. */
  constructor(count: number) {
    this.workers = Array.from({ length: count }, () => this.start());
  }

  /** `checkPage(rows)` on a worker. Errors: the worker's error (kind kept), or its crash as `internal`. */
  check(rows: RawAuditRow[]): Promise<CheckedPage> {
    const id = this.nextId++;
    const answer = new Promise<CheckedPage>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    this.workers[id % this.workers.length]?.postMessage({ id, rows } satisfies CheckRequest);
    return answer;
  }

  /** Ends the workers; pages still being checked are rejected. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.map((worker) => worker.terminate()));
    this.failAll(new GatehouseError("internal", "audit verification ended before the page was checked"));
  }

  private start(): Worker {
    const worker = new Worker(new URL("./verify-worker.ts", import.meta.url));
    worker.on("message", (reply: CheckReply) => {
      const waiting = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if ("page" in reply) waiting?.resolve(reply.page);
      else waiting?.reject(new GatehouseError(reply.error.kind, reply.error.message));
    });
    // A worker that dies takes its pages with it: fail every page waiting, the verification stops.
    worker.on("error", (error) =>
      this.failAll(
        new GatehouseError("internal", `audit verify worker failed: ${error.message}`, { cause: error }),
      ),
    );
    worker.on("exit", (code) => {
      if (!this.closing)
        this.failAll(new GatehouseError("internal", `audit verify worker exited (code ${code})`));
    });
    return worker;
  }

  private failAll(error: Error): void {
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}
