/** What Core.invoke records of a call besides its decision: the audit appender bound to the call, the budget settled once it ran, the digest that identifies its arguments, and the text fields Postgres cannot store. */
import type { InvokeCall } from "../api/agent-protocol.ts";
import { parseArguments } from "./arguments.ts";
import { type JsonObject, sha256Hex } from "./canonical.ts";
import type { AuditOutcome, CoreDeps, ExecutionRecord, SessionContext } from "./ports.ts";

/**
 * Settles an executed call's reservations: the tool call is consumed; a write counts only when it
 * succeeded or may have (`unknown`) — a write that failed changed nothing and gives its write back.
 */
export async function settleBudget(deps: CoreDeps, execution: ExecutionRecord) {
  if (execution.state === "failed") await deps.budget.release(execution.id, deps.clock.nowMicros(), "write");
  await deps.budget.consume(execution.id, deps.clock.nowMicros());
}

/**
 * Which of the call's text fields holds U+0000. Postgres text and jsonb cannot store it as sent, so
 * the session's history could not keep the call the model made.
 */
export function unstorableField(call: InvokeCall): "callId" | "tool" | undefined {
  if (call.callId.includes("\u0000")) return "callId";
  if (call.tool.includes("\u0000")) return "tool";
  return undefined;
}

/** Digest identifying the arguments: canonical when they parse, `{}` for empty text, else the raw text's. */
export function identityDigestOf(raw: string): string {
  if (raw.trim() === "") return sha256Hex("{}");
  const parsed = parseArguments(raw);
  return parsed.ok ? parsed.digest : sha256Hex(`raw:${raw}`);
}

export function auditor(deps: CoreDeps, session: SessionContext, executionId: string) {
  return (kind: string, outcome: AuditOutcome, payload: JsonObject) =>
    deps.audit.append({
      kind,
      actor: session.subject.user,
      outcome,
      sessionUid: session.uid,
      executionId,
      atMicros: deps.clock.nowMicros(),
      payload: { session: `${session.namespace}/${session.name}`, ...payload },
    });
}
