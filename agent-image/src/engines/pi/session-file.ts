/**
 * The platform's transcript as a Pi session file (JSONL, format version 3: a header, then message
 * entries chained by `parentId`). Pi's RPC mode has no command to hand it a history, so every run
 * starts Pi on such a file: Pi holds the conversation in memory only, the transcript stays the record.
 */
import { randomUUID } from "node:crypto";
import type { TranscriptItem } from "../../runtime.ts";
import { jsonLine } from "../subprocess/jsonl.ts";

/** Where Pi's assistant messages say they came from: the provider of our models.json. */
export interface SessionOrigin {
  provider: string;
  model: string;
  cwd: string;
}

const NO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** Arguments as Pi stores them: an object. A string that is not a JSON object replays as `{}`, as in the builtin engine. */
function argumentsObject(raw: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** A call's arguments as the model gets them back: the raw string when it is a JSON object, else `{}`. */
export function replayedArguments(raw: string): string {
  return isObjectText(raw) ? raw : "{}";
}

function isObjectText(raw: string): boolean {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

/** Pi's message for one transcript item. */
function piMessage(item: TranscriptItem, origin: SessionOrigin, timestamp: number): Record<string, unknown> {
  if (item.role === "user") return { role: "user", content: [{ type: "text", text: item.text }], timestamp };
  if (item.role === "tool") {
    return {
      role: "toolResult",
      toolCallId: item.callId,
      toolName: item.name,
      content: [{ type: "text", text: item.content }],
      isError: false,
      timestamp,
    };
  }
  const content: Record<string, unknown>[] = item.text ? [{ type: "text", text: item.text }] : [];
  for (const call of [...item.calls].sort((a, b) => a.position - b.position)) {
    content.push({
      type: "toolCall",
      id: call.callId,
      name: call.name,
      arguments: argumentsObject(call.arguments),
    });
  }
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: origin.provider,
    model: origin.model,
    usage: NO_USAGE,
    stopReason: item.calls.length > 0 ? "toolUse" : "stop",
    timestamp,
  };
}

/** The session file's text for `history`. */
export function sessionFileText(history: TranscriptItem[], origin: SessionOrigin, now = new Date()): string {
  const timestamp = now.toISOString();
  const lines = [jsonLine({ type: "session", version: 3, id: randomUUID(), timestamp, cwd: origin.cwd })];
  let parentId: string | null = null;
  history.forEach((item, index) => {
    const id = (index + 1).toString(16).padStart(8, "0");
    lines.push(
      jsonLine({ type: "message", id, parentId, timestamp, message: piMessage(item, origin, now.getTime()) }),
    );
    parentId = id;
  });
  return lines.join("");
}
