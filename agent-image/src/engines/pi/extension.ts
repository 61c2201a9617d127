/**
 * Gatehouse's extension, loaded inside Pi (`pi -e`). Pi runs with `--no-builtin-tools`, so the tools
 * registered here — the session's capability tools — are all the model has, and none of them runs
 * anything: each execution is handed to the adapter over the bridge, which takes it to the
 * ToolExecutor (in production: the gateway, i.e. Core) and answers with the tool result. It also makes
 * the model request say what the platform says: the session's system prompt exactly (Pi appends the
 * date and its working directory), the session's model name, and `tool_choice: "none"` when asked;
 * and it compacts each request to the model's window (compaction.ts), reporting each compaction.
 * When the bridge closes (the agent process died) Pi exits.
 */
import { connect } from "node:net";
import { jsonLine, readLines } from "../subprocess/jsonl.ts";
import {
  BRIDGE_SOCKET_ENV,
  CONTINUE_MESSAGE_TYPE,
  type CompactionReport,
  type FromExtension,
  type RunSetup,
  type ToExtension,
} from "./bridge-protocol.ts";
import { RequestCompactor } from "./compaction.ts";
import type { ExtensionAPI } from "./package.ts";

interface ToolCallBlock {
  type: string;
  id?: string;
}

export default async function gatehouse(pi: ExtensionAPI): Promise<void> {
  const socketPath = process.env[BRIDGE_SOCKET_ENV];
  if (!socketPath)
    throw new Error(`${BRIDGE_SOCKET_ENV} is not set: this extension runs only under the Gatehouse agent`);
  const socket = connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  // Without the agent process nobody can answer a tool call: end Pi.
  socket.on("close", () => process.exit(70));
  socket.on("error", () => {});
  const send = (message: FromExtension) => socket.write(jsonLine(message));

  let setup: RunSetup | undefined;
  const registered = new Set<string>();
  let messages = -1;
  /** The calls of the latest assistant message, and which of them Pi has begun to execute. */
  let calls: { id: string | undefined; claimed: boolean }[] = [];
  let nextRequest = 0;
  const answers = new Map<number, (answer: { content: string; terminate: boolean }) => void>();
  const compactor = new RequestCompactor();
  const seen = new Map<number, () => void>();
  const report = (compaction: CompactionReport) => {
    const id = nextRequest++;
    const acknowledged = new Promise<void>((resolve) => seen.set(id, resolve));
    send({ type: "compaction", id, ...compaction });
    return acknowledged.finally(() => seen.delete(id));
  };

  function register(tools: RunSetup["tools"]): void {
    for (const tool of tools) {
      if (registered.has(tool.name)) continue;
      registered.add(tool.name);
      pi.registerTool({
        name: tool.name,
        label: tool.name,
        description: tool.description,
        // Pi checks arguments against this before executing and would answer a mismatch itself; Core
        // must judge them, so Pi gets an open schema and the request carries the catalog's
        // (before_provider_request).
        parameters: { type: "object" } as never,
        async execute(toolCallId, _params, signal) {
          const position = calls.findIndex((call) => call.id === toolCallId && !call.claimed);
          if (position === -1) throw new Error(`call ${toolCallId} is not in the latest assistant message`);
          calls[position]!.claimed = true;
          const id = nextRequest++;
          const answer = new Promise<{ content: string; terminate: boolean }>((resolve, reject) => {
            answers.set(id, resolve);
            signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
          });
          send({ type: "execute", id, message: messages, position, callId: toolCallId, name: tool.name });
          const { content, terminate } = await answer.finally(() => answers.delete(id));
          return { content: [{ type: "text", text: content }], details: {}, terminate };
        },
      });
    }
  }

  readLines(socket, (line) => {
    const message = JSON.parse(line) as ToExtension;
    try {
      if (message.type === "answer") {
        answers.get(message.id)?.({ content: message.content, terminate: message.terminate });
        return;
      }
      if (message.type === "compaction_seen") {
        seen.get(message.id)?.();
        return;
      }
      if (message.type === "setup") {
        const { id: _id, type: _type, ...next } = message;
        setup = next;
        register(next.tools);
        pi.setActiveTools(next.tools.map((tool) => tool.name));
        messages = -1;
        calls = [];
      } else if (message.type === "call_arguments") {
        setup?.callArguments.push(...message.callArguments);
      } else if (message.type === "refused") {
        compactor.refused(message);
      } else if (message.type === "tool_choice_none") {
        if (setup) setup.toolChoiceNone = true;
      } else if (message.type === "continue") {
        pi.sendMessage(
          { customType: CONTINUE_MESSAGE_TYPE, content: "", display: false },
          { triggerTurn: true },
        );
      }
      send({ type: "done", id: message.id });
    } catch (error) {
      send({ type: "failed", id: message.id, error: error instanceof Error ? error.message : String(error) });
    }
  });

  pi.on("message_end", (event) => {
    const message = event.message as {
      role: string;
      content?: ToolCallBlock[];
      usage?: { input?: number; cacheRead?: number; cacheWrite?: number };
    };
    if (message.role !== "assistant") return;
    // The prompt's tokens, cached ones included (Pi counts those apart), as turn_end reports them.
    const usage = message.usage;
    if (usage) compactor.observeUsage((usage.input ?? 0) + (usage.cacheRead ?? 0) + (usage.cacheWrite ?? 0));
    messages += 1;
    calls = (message.content ?? [])
      .filter((block) => block.type === "toolCall")
      .map((block) => ({ id: block.id, claimed: false }));
  });

  /** The text of each assistant message Pi will send, in order (see before_provider_request). */
  let assistantTexts: string[] = [];

  // The continue marker starts a turn; the model must not see it.
  pi.on("context", (event) => {
    const messages = event.messages.filter(
      (message) => !(message.role === "custom" && message.customType === CONTINUE_MESSAGE_TYPE),
    );
    assistantTexts = messages.flatMap((message) => {
      if (message.role !== "assistant" || message.stopReason === "error" || message.stopReason === "aborted")
        return [];
      return [message.content.map((block) => (block.type === "text" ? block.text : "")).join("")];
    });
    return { messages };
  });

  pi.on("before_provider_request", async (event) => {
    if (!setup) return undefined;
    const payload = event.payload as {
      model?: string;
      messages?: { role: string; content: unknown; tool_calls?: { function: { arguments: string } }[] }[];
      tool_choice?: unknown;
      tools?: unknown[];
    };
    // A user message of text only goes as a string, as the builtin engine sends it.
    for (const message of payload.messages ?? []) {
      const parts = message.content;
      if (message.role === "user" && Array.isArray(parts) && parts.every((part) => part?.type === "text"))
        message.content = parts.map((part: { text: string }) => part.text).join("");
    }
    // Pi drops an assistant text that is only whitespace; the model said it, so it is sent back as said.
    const assistants = (payload.messages ?? []).filter((message) => message.role === "assistant");
    if (assistants.length === assistantTexts.length) {
      assistants.forEach((message, index) => {
        const text = assistantTexts[index]!;
        if (text && !text.trim() && !message.content) message.content = text;
      });
    }
    // The tools as the catalog describes them.
    for (const tool of (payload.tools ?? []) as { function?: { name?: string; parameters?: unknown } }[]) {
      const described = setup.tools.find((candidate) => candidate.name === tool.function?.name);
      if (described && tool.function) tool.function.parameters = described.parameters;
    }
    // The model gets its calls' arguments back as it wrote them (Pi would re-serialise its parse).
    const calls = (payload.messages ?? []).flatMap((message) => message.tool_calls ?? []);
    if (calls.length === setup.callArguments.length)
      calls.forEach((call, index) => {
        call.function.arguments = setup!.callArguments[index]!;
      });
    const first = payload.messages?.[0];
    const rest =
      first && (first.role === "system" || first.role === "developer")
        ? payload.messages!.slice(1)
        : (payload.messages ?? []);
    const whole = setup.system ? [{ role: "system", content: setup.system }, ...rest] : rest;
    const { messages, compaction } = setup.context
      ? compactor.plan(whole as never, payload.tools ?? [], setup.context)
      : { messages: whole, compaction: undefined };
    // The adapter emits the event before the request leaves, so it precedes the turn's events.
    if (compaction) await report(compaction);
    return {
      ...payload,
      model: setup.model,
      messages,
      ...(setup.toolChoiceNone && payload.tools?.length ? { tool_choice: "none" } : {}),
    };
  });
}
