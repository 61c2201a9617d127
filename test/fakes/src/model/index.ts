/**
 * The scripted OpenAI-compatible model server (DESIGN §9), Chat Completions and Responses, used by agent
 * tests, e2e and the demo.
 */
import { fileURLToPath } from "node:url";

export {
  completionBody,
  completionChunks,
  estimateUsage,
  toolCallDeltas,
  type Usage,
  usageOf,
} from "./completion.ts";
export { type ConversationView, viewConversation } from "./conversation.ts";
export { type DeltaLayout, type PlayedAnswer, type PlayedCall, play, unanswered } from "./play.ts";
export { type RecordedRequest, recordedHeaders } from "./recorder.ts";
export { outputItems, responseBody, responseEvents, responseUsage, type WireResponse } from "./responses.ts";
export { chatMessagesOf, ResponsesRequest } from "./responses-request.ts";
export { type Fault, loadScript, Script, ScriptError, type Step, type Wait } from "./script.ts";
export {
  type ScriptedModel,
  type ScriptedModelOptions,
  startScriptedModel,
} from "./server.ts";

/** The repo's scripts folder, `test/fakes/scripts`. */
export const defaultScriptsDir = fileURLToPath(new URL("../../scripts", import.meta.url));
