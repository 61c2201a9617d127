/**
 * Context compaction of the builtin engine (DESIGN §9), pure: what the model sees when the
 * conversation nears the model's context window. The full conversation stays in the engine (and the
 * platform's transcript in Postgres); a plan only chooses a view of it.
 *
 * The view is the head (the system prompt), then — once compacted — one user message holding a
 * structured summary of everything before the boundary, then the messages from the boundary on. The
 * boundary only moves forward and only to the start of a unit: a user message, or an assistant message
 * together with all its tool messages. So a tool call never loses its result nor a result its call, and
 * an assistant turn whose calls lack results (an Approval pending) is kept whole, as is the latest
 * unit. The boundary stays where it is while the view fits (the request's prefix stays stable for
 * prompt caches); when it no longer fits, it moves to the first unit start whose tail fits half the
 * budget, so compaction happens once per many turns, not on every turn. When even the units that must
 * stay do not fit, their largest tool results are cut, with a marker.
 *
 * The summary is built by the engine from the conversation, deterministically, rather than written by
 * the model: a summarizing request would itself have to fit the window it is trying to relieve, costs
 * tokens of the session's budget, can fail or be steered by injected tool output, and could drop the
 * approvals and refusals the agent must not forget. Built from the whole dropped part every time (not
 * from the previous summary), it never drifts: the task (the first user message), later requests, the
 * approvals pending and decided, the assistant's own words (its decisions), and the latest result per
 * tool and arguments (a later read supersedes an earlier one), newest first within its token cap.
 *
 * Tokens are estimated by `estimate.ts` (conservative on prose, JSON and ids; its measured error is
 * there); the engine scales the estimate by what the endpoint reports (`context.ts`).
 */
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { estimateText } from "./estimate.ts";

export type ChatMessage = ChatCompletionMessageParam;

/** Characters a token of the estimate holds at most, for cutting text to a token count. */
const CHARS_PER_TOKEN = 6;
/** Tokens a message costs besides its text (role, separators; OpenAI's cookbook counts 3–4). */
export const MESSAGE_OVERHEAD = 4;

/** An Approval a call went through: `decided` once its answer is known (then `status` is it). */
export interface ApprovalNote {
  approval: string;
  decided: boolean;
  status?: string;
}

function textOf(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

function callsOf(message: ChatMessage) {
  return message.role === "assistant"
    ? (message.tool_calls ?? []).flatMap((call) => (call.type === "function" ? [call] : []))
    : [];
}

/** The estimated tokens of one message: its text, its calls (id, name, arguments) and overhead. */
export function estimateMessage(message: ChatMessage): number {
  let tokens = estimateText(textOf(message.content)) + MESSAGE_OVERHEAD;
  for (const call of callsOf(message))
    tokens +=
      estimateText(call.id) + estimateText(call.function.name) + estimateText(call.function.arguments) + 3;
  return tokens;
}

/** The estimated tokens the tool definitions add to every request. */
export function estimateTools(tools: ChatCompletionTool[]): number {
  return tools.length === 0 ? 0 : estimateText(JSON.stringify(tools));
}

/** A unit the boundary may not split: `[start, end)` of the messages; `open` when a call lacks its result. */
interface Unit {
  start: number;
  end: number;
  open: boolean;
}

function unitsOf(messages: ChatMessage[], head: number): Unit[] {
  const units: Unit[] = [];
  let owed = new Map<string, number>();
  for (let index = head; index < messages.length; index += 1) {
    const message = messages[index]!;
    const current = units.at(-1);
    if (message.role === "tool" && current && (owed.get(message.tool_call_id) ?? 0) > 0) {
      owed.set(message.tool_call_id, owed.get(message.tool_call_id)! - 1);
      current.end = index + 1;
      current.open = [...owed.values()].some((count) => count > 0);
      continue;
    }
    owed = new Map();
    for (const call of callsOf(message)) owed.set(call.id, (owed.get(call.id) ?? 0) + 1);
    units.push({ start: index, end: index + 1, open: owed.size > 0 });
  }
  return units;
}

/**
 * What is wrong with a conversation as a request: a tool message that answers no call of the assistant
 * message before it, or a call left without its tool message. With `openTail`, the last assistant
 * message may still wait for results (an Approval pending). Empty when it is well-formed.
 */
export function pairingProblems(messages: ChatMessage[], options: { openTail?: boolean } = {}): string[] {
  const problems: string[] = [];
  let owed = new Map<string, number>();
  const close = (last: boolean) => {
    if (last && options.openTail) return;
    for (const [id, count] of owed) if (count > 0) problems.push(`call ${id} has no result`);
  };
  for (const message of messages) {
    if (message.role === "tool") {
      const count = owed.get(message.tool_call_id) ?? 0;
      if (count === 0) problems.push(`result ${message.tool_call_id} answers no call before it`);
      else owed.set(message.tool_call_id, count - 1);
      continue;
    }
    close(false);
    owed = new Map();
    for (const call of callsOf(message)) owed.set(call.id, (owed.get(call.id) ?? 0) + 1);
  }
  close(true);
  return problems;
}

/** Input of {@link planContext}; tokens are the estimate's. */
export interface ContextInput {
  /** The whole conversation, the system prompt first when there is one. */
  messages: ChatMessage[];
  /** Index of the first message kept whole by the previous plan (0: nothing summarized yet). */
  boundary: number;
  /** Tokens the messages may take: the window less the answer's reserve and the tool definitions. */
  budget: number;
  estimate(message: ChatMessage): number;
  /** Approvals by call id, for the summary. */
  approvals?: ReadonlyMap<string, ApprovalNote>;
  /**
   * Summaries already built for this conversation, by boundary and cap: the part before a boundary
   * does not change, so its summary is built once. Clear it when the conversation is rebuilt.
   */
  summaries?: Map<string, ChatMessage>;
  /** Move the boundary even when the view fits (the endpoint refused the last one as too long). */
  force?: boolean;
}

/** A view to send. `fits` is false when not even the summary and the units that must stay fit. */
export interface ContextPlan {
  messages: ChatMessage[];
  boundary: number;
  tokens: number;
  fits: boolean;
  /** The boundary moved in this plan. */
  compacted: boolean;
  /** Tokens of the view at the previous boundary. */
  tokensBefore: number;
  /** Units (user messages, assistant turns) behind the boundary, and kept whole after it. */
  summarizedUnits: number;
  keptUnits: number;
  /** Kept tool results cut to fit. */
  cutResults: number;
}

/** Share of the budget the summary may take, and the share the kept tail aims at after compacting. */
const SUMMARY_SHARE = 0.2;
const TAIL_SHARE = 0.5;

/** Plans the view of `input.messages` (pure; see the file comment). */
export function planContext(input: ContextInput): ContextPlan {
  const { messages, budget, estimate } = input;
  const head = messages[0]?.role === "system" ? 1 : 0;
  const units = unitsOf(messages, head);
  const sizes = messages.map((message) => estimate(message));
  // suffix[i]: tokens of messages[i..].
  const suffix = new Array<number>(messages.length + 1).fill(0);
  for (let index = messages.length - 1; index >= 0; index -= 1)
    suffix[index] = suffix[index + 1]! + sizes[index]!;
  const sum = (from: number, to: number) => suffix[from]! - suffix[to]!;
  const headTokens = sum(0, head);
  const summaryCap = Math.max(64, Math.floor(budget * SUMMARY_SHARE));
  const view = (boundary: number, cut = 0) => {
    const summarized = boundary > head;
    const key = `${boundary}:${summaryCap}`;
    let summary = summarized ? input.summaries?.get(key) : undefined;
    if (summarized && !summary) {
      summary = summaryMessage(
        messages.slice(head, boundary),
        input.approvals ?? new Map(),
        summaryCap,
        estimate,
      );
      input.summaries?.set(key, summary);
    }
    const kept = messages.slice(boundary);
    const result = [...messages.slice(0, head), ...(summary ? [summary] : []), ...kept];
    return {
      messages: result,
      tokens: headTokens + (summary ? estimate(summary) : 0) + sum(boundary, messages.length),
      summarizedUnits: units.filter((unit) => unit.start < boundary).length,
      keptUnits: units.filter((unit) => unit.start >= boundary).length,
      cut,
    };
  };
  const current = Math.max(input.boundary, head);
  const now = view(current);
  if (!input.force && now.tokens <= budget)
    return { ...finish(now, current, budget), compacted: false, tokensBefore: now.tokens };

  // The last unit stays, and every unit from the first one still waiting for a result.
  const firstOpen = units.find((unit) => unit.open)?.start ?? messages.length;
  const lastStart = units.at(-1)?.start ?? messages.length;
  const limit = Math.min(firstOpen, lastStart);
  const starts = units.map((unit) => unit.start).filter((start) => start > current && start <= limit);
  const target = Math.floor(budget * TAIL_SHARE);
  const boundary =
    starts.find((start) => headTokens + summaryCap + sum(start, messages.length) <= target) ??
    starts.at(-1) ??
    current;
  let plan = view(boundary);
  if (plan.tokens > budget) plan = cutResults(plan, budget, estimate);
  return { ...finish(plan, boundary, budget), compacted: boundary !== current, tokensBefore: now.tokens };
}

function finish(
  view: { messages: ChatMessage[]; tokens: number; summarizedUnits: number; keptUnits: number; cut: number },
  boundary: number,
  budget: number,
) {
  return {
    messages: view.messages,
    boundary,
    tokens: view.tokens,
    fits: view.tokens <= budget,
    summarizedUnits: view.summarizedUnits,
    keptUnits: view.keptUnits,
    cutResults: view.cut,
  };
}

/** The marker a cut tool result ends with. */
export const CUT_MARKER = "characters were left out to fit the model's context window";

/** Cuts the largest kept tool results (never below 256 characters) until the view fits. */
function cutResults<V extends { messages: ChatMessage[]; tokens: number; cut: number }>(
  view: V,
  budget: number,
  estimate: (message: ChatMessage) => number,
): V {
  const messages = [...view.messages];
  let tokens = view.tokens;
  const cut = new Set<number>();
  for (let round = 0; tokens > budget && round < 4 * messages.length; round += 1) {
    let largest = -1;
    // Only kept units hold tool messages: the head is the system prompt, the summary a user message.
    for (let index = 0; index < messages.length; index += 1) {
      const message = messages[index]!;
      if (message.role !== "tool" || typeof message.content !== "string" || message.content.length <= 256)
        continue;
      if (largest < 0 || message.content.length > (messages[largest]!.content as string).length)
        largest = index;
    }
    if (largest < 0) break;
    const message = messages[largest] as Extract<ChatMessage, { role: "tool" }>;
    const content = message.content as string;
    const keep = Math.max(256, content.length - ((tokens - budget) * CHARS_PER_TOKEN + 128));
    const shorter = {
      ...message,
      content: `${content.slice(0, keep)}\n[… ${content.length - keep} ${CUT_MARKER}; the platform keeps the full result]`,
    };
    tokens += estimate(shorter) - estimate(message);
    messages[largest] = shorter;
    cut.add(largest);
  }
  return { ...view, messages, tokens, cut: cut.size };
}

function excerpt(text: string, chars: number): string {
  // Cut before collapsing whitespace: results can be megabytes.
  const flat = text
    .slice(0, 2 * chars + 64)
    .replace(/\s+/g, " ")
    .trim();
  return flat.length <= chars ? flat : `${flat.slice(0, chars)}…`;
}

/** The first line of every summary: the marker a test or a person finds it by. */
export const SUMMARY_HEADER = "[Context compacted by the agent runtime]";

/**
 * The summary of `dropped` (whole units) as one user message, at most `cap` tokens by `estimate`:
 * the task and the approvals always, then the latest requests, decisions and tool results that fit.
 */
export function summaryMessage(
  dropped: ChatMessage[],
  approvals: ReadonlyMap<string, ApprovalNote>,
  cap: number,
  estimate: (message: ChatMessage) => number,
): ChatMessage {
  const users = dropped
    .filter((message) => message.role === "user")
    .map((message) => textOf(message.content));
  const calls = new Map<string, { name: string; arguments: string }>();
  const approvalLines: string[] = [];
  const entries: string[] = [];
  const latestResult = new Map<string, number>();
  let turn = 0;
  for (const message of dropped) {
    if (message.role === "assistant") {
      turn += 1;
      const text = textOf(message.content);
      if (text) entries.push(`- said: ${excerpt(text, 300)}`);
      for (const call of callsOf(message)) calls.set(call.id, call.function);
    } else if (message.role === "tool") {
      const call = calls.get(message.tool_call_id);
      const name = call?.name ?? "a tool";
      const args = excerpt(call?.arguments ?? "", 160);
      const note = approvals.get(message.tool_call_id);
      if (note)
        approvalLines.push(
          `- ${note.decided ? `decided (${note.status ?? "answered"})` : "pending"}: Approval ${note.approval} for ${name}(${excerpt(args, 120)})`,
        );
      const key = `${name}\u0000${call?.arguments ?? ""}`;
      const previous = latestResult.get(key);
      if (previous !== undefined) entries[previous] = "";
      latestResult.set(key, entries.length);
      entries.push(`- ${name}(${args}) → ${excerpt(textOf(message.content), 400)}`);
    }
  }
  const results = entries.filter((entry) => entry !== "");
  const later = users.slice(1).map((text) => `- ${excerpt(text, 500)}`);
  const task = excerpt(users[0] ?? "(none)", Math.min(2000, Math.floor(cap / 2)));
  const section = (title: string, lines: string[], total: number) =>
    lines.length === 0
      ? []
      : [
          "",
          `${title}${total > lines.length ? ` (${total - lines.length} earlier left out)` : ""}:`,
          ...lines,
        ];
  const build = (shown: { approvals: number; later: number; results: number }) =>
    [
      SUMMARY_HEADER,
      `The first ${turn} model turns were replaced by this summary to fit the context window; the platform keeps the full transcript. A result cut short can be read again with the same tool.`,
      "",
      "Task (the user's first message):",
      task,
      ...section(
        "Approvals, oldest first",
        approvalLines.slice(approvalLines.length - shown.approvals),
        approvalLines.length,
      ),
      ...section("Later user messages, oldest first", later.slice(later.length - shown.later), later.length),
      ...section(
        "Decisions and tool results, oldest first",
        results.slice(results.length - shown.results),
        results.length,
      ),
    ].join("\n");
  // In order of importance, the most recent lines of each list that still fit the cap.
  const shown = { approvals: 0, later: 0, results: 0 };
  const lists = { approvals: approvalLines, later, results };
  for (const key of ["approvals", "later", "results"] as const) {
    let low = 0;
    let high = lists[key].length;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (estimate({ role: "user", content: build({ ...shown, [key]: middle }) }) <= cap) low = middle;
      else high = middle - 1;
    }
    shown[key] = low;
  }
  return { role: "user", content: build(shown) };
}
