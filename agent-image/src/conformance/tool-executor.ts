/**
 * An in-memory `ToolExecutor` that answers as Core does, per a script of plans by tool name:
 *   - arguments that are not a JSON object → `invalid_arguments`, nothing runs (Core's first check);
 *   - `ok` → the business system runs it: `succeeded` with the receipt;
 *   - `denied` → Core refuses it: `denied` with the reason, nothing runs;
 *   - `invalid` → the arguments break the capability's schema: `invalid_arguments`, nothing runs;
 *   - `refused` → the business system refuses: `failed`, final (never run again);
 *   - `approval` → `pending_approval`; `decide` later approves it (then it runs) or rejects it with a
 *     reason, worded as Core words a rejection;
 *   - `unavailable` → the gateway cannot be reached: the invoke throws with kind `unavailable`;
 *   - `hang` → the gateway never answers: the invoke waits until its signal aborts;
 *   - `lost` → the business system runs it and Core records the answer, which never reaches the engine
 *     (the connection broke): the invoke waits until its signal aborts.
 * `onStall` is called when an invoke starts waiting that way, so a case can stop the run right then.
 * Like Core it recognises a call invoked again (same turn, position and arguments) and answers what it
 * recorded, so a resumed engine that re-invokes a call never runs it twice. It writes the gateway's
 * transcript entries into the session's `Platform`.
 */
import type { ToolAnswer, ToolCallRequest, ToolExecutor, ToolInvocation } from "../runtime.ts";
import type { Platform } from "./platform.ts";

/** How the executor answers one call. */
export type Plan =
  | { ok: string }
  | { denied: string }
  | { invalid: string }
  | { refused: string }
  | { approval: string }
  | { unavailable: string }
  | { hang: true }
  | { lost: true };

/** Plans by tool name: one plan, or one per call. */
export type Plans = Record<string, Plan | ((call: ToolCallRequest) => Plan)>;

/** A call the business system received (the effect the suite counts). */
export interface Execution {
  turn: number;
  position: number;
  callId: string;
  name: string;
  arguments: string;
}

interface Approval {
  call: ToolCallRequest;
  outcome: ToolAnswer | undefined;
  waiters: Array<(answer: ToolAnswer) => void>;
}

/** A failure of the executor itself, with the shared error kind. */
export class ExecutorError extends Error {
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.name = "ExecutorError";
    this.kind = kind;
  }
}

/** The receipt `ok` plans answer when they give none. */
export function receiptOf(call: Pick<ToolCallRequest, "name" | "callId">): string {
  return JSON.stringify({ result: { tool: call.name, call: call.callId, version: 7 } });
}

export interface InMemoryExecutor extends ToolExecutor {
  /** Every invoke, in order (repeats included). */
  readonly invoked: ToolCallRequest[];
  /** Every call the business system received. */
  readonly executions: Execution[];
  /** Signals the invokes and waits were given, in order. */
  readonly signals: AbortSignal[];
  /** Called when an invoke stalls (`hang`, `lost`). */
  onStall: (() => void) | undefined;
  /** Decides a pending approval: approved (the call runs) or rejected by `approver` with `reason`. */
  decide(approval: string, verdict: { approve: true } | { reject: string }): void;
}

/** `plans` by tool name; a tool without a plan answers `ok` with {@link receiptOf}. */
export function inMemoryExecutor(platform: Platform, plans: Plans = {}): InMemoryExecutor {
  const invoked: ToolCallRequest[] = [];
  const executions: Execution[] = [];
  const signals: AbortSignal[] = [];
  const approvals = new Map<string, Approval>();
  const recorded = new Map<string, { call: ToolCallRequest; invocation: ToolInvocation }>();

  const execute = (call: ToolCallRequest, content?: string): ToolAnswer => {
    executions.push({ ...call });
    return { status: "succeeded", content: content ?? receiptOf(call) };
  };
  const done = (call: ToolCallRequest, answer: ToolAnswer): ToolInvocation => {
    platform.core("tool_result", {
      turn: call.turn,
      position: call.position,
      callId: call.callId,
      ...answer,
    });
    return { kind: "done", ...answer };
  };
  const pending = (name: string): ToolInvocation => ({
    kind: "pending_approval",
    approval: name,
    wait(signal) {
      signals.push(signal);
      const approval = approvals.get(name)!;
      if (approval.outcome) return Promise.resolve(approval.outcome);
      return new Promise((resolve, reject) => {
        const abort = () => reject(new ExecutorError("aborted", `the wait for ${name} was aborted`));
        if (signal.aborted) return abort();
        signal.addEventListener("abort", abort, { once: true });
        approval.waiters.push((answer) => {
          signal.removeEventListener("abort", abort);
          resolve(answer);
        });
      });
    },
  });

  function answer(call: ToolCallRequest, signal: AbortSignal): Promise<ToolInvocation> | ToolInvocation {
    try {
      const value: unknown = JSON.parse(call.arguments);
      if (typeof value !== "object" || value === null || Array.isArray(value))
        throw new Error("not an object");
    } catch {
      platform.core("tool_call", { ...request(call) });
      return done(call, { status: "invalid_arguments", content: "Invalid arguments: not a JSON object." });
    }
    const entry = plans[call.name];
    const plan = (typeof entry === "function" ? entry(call) : entry) ?? { ok: receiptOf(call) };
    if ("unavailable" in plan) throw new ExecutorError("unavailable", plan.unavailable);
    const stall = () =>
      new Promise<never>((_, reject) => {
        const abort = () => reject(new ExecutorError("aborted", "the invoke was aborted"));
        if (signal.aborted) abort();
        else signal.addEventListener("abort", abort, { once: true });
        executor.onStall?.();
      });
    if ("hang" in plan) return stall();
    platform.core("tool_call", { ...request(call) });
    if ("lost" in plan) {
      done(call, execute(call));
      return stall();
    }
    if ("ok" in plan) return done(call, execute(call, plan.ok));
    if ("denied" in plan) return done(call, { status: "denied", content: plan.denied });
    if ("invalid" in plan) return done(call, { status: "invalid_arguments", content: plan.invalid });
    if ("refused" in plan) {
      executions.push({ ...call });
      return done(call, { status: "failed", content: plan.refused });
    }
    approvals.set(plan.approval, { call, outcome: undefined, waiters: [] });
    platform.core("tool_result", {
      turn: call.turn,
      position: call.position,
      callId: call.callId,
      status: "pending_approval",
      content: `Waiting for approval ${plan.approval}.`,
      approval: plan.approval,
    });
    return pending(plan.approval);
  }

  const executor: InMemoryExecutor = {
    invoked,
    executions,
    signals,
    onStall: undefined,
    async invoke(call, { signal }) {
      invoked.push({ ...call });
      signals.push(signal);
      const key = `${call.turn}:${call.position}`;
      const earlier = recorded.get(key);
      if (earlier) {
        if (earlier.call.arguments !== call.arguments)
          return {
            kind: "done",
            status: "denied",
            content: "This call was made before with other arguments.",
          };
        const invocation = earlier.invocation;
        if (invocation.kind === "done") return invocation;
        const outcome = approvals.get(invocation.approval)?.outcome;
        return outcome ? { kind: "done", ...outcome } : invocation;
      }
      const invocation = await answer(call, signal);
      recorded.set(key, { call: { ...call }, invocation });
      return invocation;
    },
    decide(name, verdict) {
      const approval = approvals.get(name);
      if (!approval || approval.outcome) throw new Error(`no pending approval ${name}`);
      approval.outcome =
        "approve" in verdict
          ? execute(approval.call)
          : {
              status: "denied",
              content: `rejected by carol: ${verdict.reject}. This is a person's decision, not an error: the call was not executed; do not propose it again unchanged.`,
            };
      platform.core("approval_outcome", { approval: name, ...approval.outcome });
      for (const waiter of approval.waiters.splice(0)) waiter(approval.outcome);
    },
  };
  return executor;
}

function request(call: ToolCallRequest) {
  return {
    turn: call.turn,
    position: call.position,
    callId: call.callId,
    tool: call.name,
    arguments: call.arguments,
  };
}
