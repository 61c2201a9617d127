/**
 * What the model sees (DESIGN §4 step 10): `InvokeAnswer`s built from Core's records. Results above a
 * size limit are truncated with a marker; the full receipt stays in the execution row ("kept by
 * reference": the marker names the execution id).
 */
import type { ErrorKind } from "@gatehouse/provider-sdk";
import type { InvokeAnswer } from "../api/agent-protocol.ts";
import type { ExecutionRecord } from "./ports.ts";

/**
 * `content` cut to at most `maxBytes` UTF-8 bytes (marker included) at a character boundary, with a
 * marker naming the total size and `reference`. Unchanged when it fits.
 */
export function truncateForModel(content: string, maxBytes: number, reference: string): string {
  const bytes = new TextEncoder().encode(content);
  if (bytes.length <= maxBytes) return content;
  const marker = (shown: number) =>
    `\n…[truncated by Gatehouse: ${shown} of ${bytes.length} bytes shown; the full result is kept with ${reference}]`;
  const budget = Math.max(0, maxBytes - new TextEncoder().encode(marker(maxBytes)).length);
  let cut = budget;
  // Back up to a UTF-8 lead byte so no character is split (continuation bytes are 0b10xxxxxx).
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  const head = new TextDecoder().decode(bytes.subarray(0, cut));
  return head + marker(cut);
}

/** The answer for an execution row in any state. `maxResultBytes` bounds `content`. */
export function answerFromExecution(execution: ExecutionRecord, maxResultBytes: number): InvokeAnswer {
  const executionId = execution.id;
  const receipt = execution.receipt;
  // A person's resolution replaces the unknown outcome; the receipt (if any) is the unknown one's.
  if (execution.resolution && (execution.state === "succeeded" || execution.state === "failed")) {
    const { resolver, reason } = execution.resolution;
    const content =
      execution.state === "succeeded"
        ? `The outcome of this call was unknown; ${resolver} checked the business system and confirmed it took effect: ${reason}`
        : `The outcome of this call was unknown; ${resolver} checked the business system and found it did not take effect: ${reason}. Report it to the user; do not propose it again unchanged.`;
    return {
      status: execution.state,
      content: truncateForModel(content, maxResultBytes, `execution ${executionId}`),
      executionId,
      ...(execution.state === "failed" ? { errorKind: "unknown_outcome" as const } : {}),
    };
  }
  switch (execution.state) {
    case "succeeded": {
      const body: Record<string, unknown> = { result: receipt?.result ?? null };
      if (receipt?.evidence) body.evidence = receipt.evidence;
      const content = truncateForModel(JSON.stringify(body), maxResultBytes, `execution ${executionId}`);
      return { status: "succeeded", content, executionId };
    }
    case "failed": {
      const errorKind: ErrorKind = execution.errorKind ?? receipt?.errorKind ?? "internal";
      const detail = receipt?.message ?? execution.message ?? "no details";
      const content =
        errorKind === "forbidden"
          ? `The business system refused this action (forbidden): ${detail}. This is final: do not retry it; report it to the user.`
          : `The call failed (${errorKind}): ${detail}`;
      return {
        status: "failed",
        content: truncateForModel(content, maxResultBytes, `execution ${executionId}`),
        executionId,
        errorKind,
      };
    }
    case "unknown":
      return {
        status: "unknown",
        content:
          `The outcome of this call is unknown (${execution.message ?? "no answer from the business system"}): ` +
          "it may or may not have taken effect. Do not repeat it; a human will resolve it.",
        executionId,
        errorKind: "unknown_outcome",
      };
    case "started":
      return {
        status: "unknown",
        content: "This call is already being executed; its outcome is not known yet. Do not repeat it.",
        executionId,
        errorKind: "conflict",
      };
  }
}

/** A refusal before anything was executed (policy, visibility, identity binding, limits). */
export function deniedAnswer(message: string, errorKind: ErrorKind, executionId?: string): InvokeAnswer {
  return { status: "denied", content: message, errorKind, ...(executionId ? { executionId } : {}) };
}

/** Arguments the model must fix. */
export function invalidArgumentsAnswer(message: string): InvokeAnswer {
  return {
    status: "invalid_arguments",
    content: `Invalid arguments: ${message}. Fix the arguments and call the tool again.`,
    errorKind: "invalid_arguments",
  };
}

/** An Approval was requested (or already is pending): the agent waits on it. */
export function pendingApprovalAnswer(
  approvalName: string,
  executionId: string,
  message: string,
): InvokeAnswer {
  return { status: "pending_approval", content: message, executionId, approval: { name: approvalName } };
}
