/**
 * Text from agents, models and providers made harmless for the approver's terminal. A transcript, an
 * Approval's arguments or a condition's message may carry escape sequences (CSI: colours, cursor
 * moves that redraw what was printed; OSC 8: hyperlinks whose text lies about their target; OSC 52:
 * writes to the clipboard), other C0 and C1 controls (a bare CR that overwrites the line) and Unicode
 * bidi controls that show text in another order than it is (U+202E "right-to-left override").
 * Two steps: node's `stripVTControlCharacters` removes whole CSI and OSC sequences from human-readable
 * text; every control or bidi character left is then replaced by its `\uXXXX` escape, visible and —
 * since such characters are found only inside strings of JSON.stringify's output — valid JSON that
 * parses back to the same value, so the same escape guards `-o json` without changing what it says.
 */
import { stripVTControlCharacters } from "node:util";

/**
 * C0 controls but TAB and LF, DEL, C1 controls (U+009B is a one-character CSI), and the bidi controls:
 * ALM U+061C, LRM/RLM U+200E–U+200F, embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `text` with every control and bidi character (but TAB and LF) replaced by its `\uXXXX` escape. Lossless for JSON. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Human-readable `text` for the terminal: escape sequences removed, other controls escaped. */
export function terminalText(text: string): string {
  return escapeControls(stripVTControlCharacters(text));
}

/** {@link terminalText} on one line: runs of whitespace (LF, CR, TAB, …) first become one space. */
export function oneLine(text: string): string {
  return terminalText(text.replace(/\s+/g, " "));
}
