/**
 * A worker thread of `verify-checkers.ts`: checks the content of the pages it is sent and answers
 * each with its problems, or with the error that stopped it.
 */
import { parentPort } from "node:worker_threads";
import { GatehouseError } from "../../core/errors.ts";
import type { CheckReply, CheckRequest } from "./verify-checkers.ts";
import { checkPage } from "./verify-rows.ts";

parentPort?.on("message", ({ id, rows }: CheckRequest) => {
  let reply: CheckReply;
  try {
    const page = checkPage(rows);
    parentPort?.postMessage({ id, page } satisfies CheckReply, [page.seqs.buffer, page.hashes.buffer]);
    return;
  } catch (error) {
    const kind = error instanceof GatehouseError ? error.kind : "internal";
    reply = { id, error: { kind, message: (error as Error).message } };
  }
  parentPort?.postMessage(reply);
});
