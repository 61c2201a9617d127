/**
 * The `ToolExecutor` that runs every tool call through the gateway (Core): `POST /v1/invoke` with the
 * model's raw arguments string; on `pending_approval`, long-poll the Approval until it is done and use
 * the final answer's `content` as the tool result. Denials, invalid arguments and business failures are
 * ordinary answers the model reads; only a failing gateway throws. A call the wire contract cannot
 * carry (arguments over 1 000 000 characters, an over-long name or id) never reaches Core: it is
 * answered here with an `invalid_arguments` result, so the model can still correct itself.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { InvokeCall } from "@gatehouse/operator/agent-protocol";
import { z } from "zod";
import type { GatewayClient } from "./gateway-client.ts";
import { GatewayError } from "./gateway-client.ts";
import type { ToolAnswer, ToolExecutor } from "./runtime.ts";

/** Options of `gatewayToolExecutor`. */
export interface GatewayToolOptions {
  /** Long-poll length per wait request, in seconds (≤ 60; default 30). */
  waitSeconds?: number;
  /** Minimum time between two wait requests, in milliseconds, in case the gateway answers early (default 1000). */
  minPollIntervalMs?: number;
}

async function waitForApproval(
  gateway: GatewayClient,
  name: string,
  options: Required<GatewayToolOptions>,
  signal: AbortSignal,
): Promise<ToolAnswer> {
  for (;;) {
    const started = Date.now();
    const wait = await gateway.waitApproval(name, options.waitSeconds, signal);
    if (wait.done) {
      if (wait.answer) return { status: wait.answer.status, content: wait.answer.content };
      return { status: "failed", content: `Approval ${name} ended in phase ${wait.phase} without a result.` };
    }
    const early = options.minPollIntervalMs - (Date.now() - started);
    if (early > 0) await sleep(early, undefined, { signal });
  }
}

/** Tool calls through `gateway`. */
export function gatewayToolExecutor(gateway: GatewayClient, options: GatewayToolOptions = {}): ToolExecutor {
  const settings = {
    waitSeconds: options.waitSeconds ?? 30,
    minPollIntervalMs: options.minPollIntervalMs ?? 1000,
  };
  return {
    async invoke(call, { signal }) {
      const parsed = InvokeCall.safeParse({
        turn: call.turn,
        position: call.position,
        callId: call.callId,
        tool: call.name,
        arguments: call.arguments,
      });
      if (!parsed.success) {
        return {
          kind: "done",
          status: "invalid_arguments",
          content: `Invalid call, not sent: ${z.prettifyError(parsed.error)}. Make the call smaller and try again.`,
        };
      }
      const answer = await gateway.invoke(parsed.data, signal);
      if (answer.status !== "pending_approval")
        return { kind: "done", status: answer.status, content: answer.content };
      const approval = answer.approval?.name;
      if (!approval)
        throw new GatewayError("internal", "gateway answered pending_approval without an approval name");
      return {
        kind: "pending_approval",
        approval,
        wait: (waitSignal) => waitForApproval(gateway, approval, settings, waitSignal),
      };
    },
  };
}
