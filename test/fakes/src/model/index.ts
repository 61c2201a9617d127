/** The scripted OpenAI-compatible model server (DESIGN §9) used by agent tests, e2e and the demo. */
import { fileURLToPath } from "node:url";

export { completionBody, completionChunks, estimateUsage, type Usage } from "./completion.ts";
export { type ConversationView, viewConversation } from "./conversation.ts";
export { type PlayedAnswer, type PlayedCall, play } from "./play.ts";
export { type Fault, loadScript, Script, ScriptError, type Step } from "./script.ts";
export {
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedModelOptions,
  startScriptedModel,
} from "./server.ts";

/** The repo's scripts folder, `test/fakes/scripts`. */
export const defaultScriptsDir = fileURLToPath(new URL("../../scripts", import.meta.url));
