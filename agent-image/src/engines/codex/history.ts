/**
 * The engine-neutral transcript as Responses API items, the history a new Codex thread is given
 * (`thread/inject_items`): Codex's own state is only a cache of what the platform stores. Call ids,
 * raw arguments and text go in byte for byte.
 */
import type { TranscriptItem } from "../../runtime.ts";

/** A Responses API input item. */
export type InputItem =
  | {
      type: "message";
      role: "user" | "assistant";
      content: { type: "input_text" | "output_text"; text: string }[];
    }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string };

/** `history` as the items a thread starts from, in order. */
export function historyItems(history: readonly TranscriptItem[]): InputItem[] {
  return history.flatMap((item): InputItem[] => {
    if (item.role === "user")
      return [{ type: "message", role: "user", content: [{ type: "input_text", text: item.text }] }];
    if (item.role === "tool")
      return [{ type: "function_call_output", call_id: item.callId, output: item.content }];
    const text: InputItem[] = item.text
      ? [{ type: "message", role: "assistant", content: [{ type: "output_text", text: item.text }] }]
      : [];
    const calls = [...item.calls]
      .sort((a, b) => a.position - b.position)
      .map(
        (call): InputItem => ({
          type: "function_call",
          call_id: call.callId,
          name: call.name,
          arguments: call.arguments,
        }),
      );
    return [...text, ...calls];
  });
}
