/**
 * Strict I-JSON parsing of one JSON object (RFC 7493 "The I-JSON Message Format" over RFC 8259).
 * `JSON.parse` silently keeps the last of duplicate keys, accepts lone surrogates in `\u` escapes and
 * rounds integers beyond 2^53, and reports errors without telling truncation from concatenation —
 * and no maintained duplicate-key-aware parser is among our dependencies — so this is a small
 * recursive-descent parser of the RFC 8259 grammar that refuses, with the position and a JSONPath:
 *   - empty input;
 *   - malformed input (RFC 8259 §2–§7: only `"`-strings, no comments, no trailing commas, no BOM,
 *     whitespace = space, tab, LF, CR; control characters escaped);
 *   - truncated input (the text ends inside a value);
 *   - content after the first value, e.g. concatenated documents `{…}{…}` (RFC 8259 §2: one value);
 *   - a top-level value that is not an object;
 *   - duplicate member names (RFC 7493 §2.3: names MUST be unique);
 *   - strings containing unpaired surrogates, escaped or raw (RFC 7493 §2.1);
 *   - strings and member names containing U+0000 (`\u0000`): valid JSON, but Postgres `jsonb` cannot
 *     store it (SQLSTATE 22P05), so such arguments could never be recorded with their execution;
 *   - integer literals outside ±(2^53 − 1) (RFC 7493 §2.2) and numbers that overflow a double;
 *   - nesting deeper than {@link MAX_DEPTH}.
 * Numbers with a fraction or exponent are IEEE doubles as in `JSON.parse`.
 */
import type { JsonObject, JsonValue } from "./canonical.ts";

/** Deepest nesting accepted (objects + arrays), so hostile input cannot exhaust the stack. */
export const MAX_DEPTH = 128;

/** Why a text is not an acceptable I-JSON object. */
export type IJsonProblemClass =
  | "empty"
  | "malformed"
  | "truncated"
  | "trailing_content"
  | "not_object"
  | "duplicate_key"
  | "lone_surrogate"
  | "nul_character"
  | "unsafe_integer"
  | "too_deep";

/** A refusal: its class, a message a model or a human can act on, and where (UTF-16 index, JSONPath). */
export interface IJsonProblem {
  class: IJsonProblemClass;
  message: string;
  /** 0-based UTF-16 code unit index into the text. */
  position: number;
  /** JSONPath of the value concerned, e.g. `$.plan.items[2]`. */
  path: string;
}

/** Result of {@link parseIJsonObject}. */
export type IJsonResult = { ok: true; value: JsonObject } | { ok: false; problem: IJsonProblem };

/** Parses `text` as exactly one I-JSON object. Never throws. */
export function parseIJsonObject(text: string): IJsonResult {
  const parser = new Parser(text);
  try {
    return { ok: true, value: parser.document() };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, problem: error.problem };
    throw error;
  }
}

/** JSONPath member accessor: `.name` for identifier-like names, else `["…"]`. */
export function jsonPathMember(parent: string, name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `${parent}.${name}` : `${parent}[${JSON.stringify(name)}]`;
}

class Refusal extends Error {
  readonly problem: IJsonProblem;
  constructor(problem: IJsonProblem) {
    super(problem.message);
    this.problem = problem;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const NUMBER_PREFIX = /-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?/y;

class Parser {
  private pos = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  document(): JsonObject {
    this.skipWhitespace();
    if (this.pos >= this.text.length) {
      this.refuse(
        "empty",
        "$",
        "the arguments are empty; send a JSON object, e.g. {} when nothing is needed",
      );
    }
    const start = this.pos;
    const value = this.value("$", 0);
    this.skipWhitespace();
    if (this.pos < this.text.length) {
      this.refuse(
        "trailing_content",
        "$",
        `found more content after the JSON value ended at character ${this.pos}; send exactly one JSON object, not several documents`,
      );
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.pos = start;
      this.refuse("not_object", "$", `the arguments must be a JSON object {…}, not ${describe(value)}`);
    }
    return value;
  }

  private value(path: string, depth: number): JsonValue {
    if (this.pos >= this.text.length) this.truncated(path);
    const c = this.text[this.pos]!;
    if (c === "{") return this.object(path, depth + 1);
    if (c === "[") return this.array(path, depth + 1);
    if (c === '"') return this.string(path, "the string at");
    if (c === "-" || (c >= "0" && c <= "9")) return this.number(path);
    if (c === "t") return this.literal("true", true, path);
    if (c === "f") return this.literal("false", false, path);
    if (c === "n") return this.literal("null", null, path);
    return this.unexpected(path, "a value (object, array, string, number, true, false or null)");
  }

  private object(path: string, depth: number): JsonObject {
    this.checkDepth(path, depth);
    this.pos++; // {
    const result: JsonObject = {};
    const seen = new Set<string>();
    this.skipWhitespace();
    if (this.peek() === "}") {
      this.pos++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.pos >= this.text.length) this.truncated(path);
      if (this.peek() !== '"') this.unexpected(path, "a property name in double quotes");
      const keyStart = this.pos;
      const key = this.string(path, "a property name in");
      const memberPath = jsonPathMember(path, key);
      if (seen.has(key)) {
        this.pos = keyStart;
        this.refuse(
          "duplicate_key",
          memberPath,
          `property ${JSON.stringify(key)} appears more than once in ${path}; send each property once`,
        );
      }
      seen.add(key);
      this.skipWhitespace();
      if (this.pos >= this.text.length) this.truncated(path);
      if (this.peek() !== ":") this.unexpected(path, `":" after property name ${JSON.stringify(key)}`);
      this.pos++;
      this.skipWhitespace();
      const value = this.value(memberPath, depth);
      // defineProperty: a member named "__proto__" must be data, not the prototype setter.
      Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
      this.skipWhitespace();
      if (this.pos >= this.text.length) this.truncated(path);
      const next = this.peek();
      this.pos++;
      if (next === "}") return result;
      if (next !== ",") {
        this.pos--;
        this.unexpected(path, '"," or "}"');
      }
    }
  }

  private array(path: string, depth: number): JsonValue[] {
    this.checkDepth(path, depth);
    this.pos++; // [
    const result: JsonValue[] = [];
    this.skipWhitespace();
    if (this.peek() === "]") {
      this.pos++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      result.push(this.value(`${path}[${result.length}]`, depth));
      this.skipWhitespace();
      if (this.pos >= this.text.length) this.truncated(path);
      const next = this.peek();
      this.pos++;
      if (next === "]") return result;
      if (next !== ",") {
        this.pos--;
        this.unexpected(path, '"," or "]"');
      }
    }
  }

  /** A string at `path`; `where` says what it is for messages ("the string at" or "a property name in"). */
  private string(path: string, where: string): string {
    const start = this.pos;
    this.pos++; // opening quote
    let out = "";
    let runStart = this.pos;
    for (;;) {
      if (this.pos >= this.text.length) this.truncated(path);
      const code = this.text.charCodeAt(this.pos);
      if (code === 0x22) {
        out += this.text.slice(runStart, this.pos);
        this.pos++;
        break;
      }
      if (code < 0x20) {
        this.unexpected(path, "an escaped control character (e.g. \\n) inside the string");
      }
      if (code !== 0x5c) {
        this.pos++;
        continue;
      }
      out += this.text.slice(runStart, this.pos);
      this.pos++; // backslash
      if (this.pos >= this.text.length) this.truncated(path);
      const escaped = this.text[this.pos]!;
      const simple = ESCAPES[escaped];
      if (simple !== undefined) {
        out += simple;
        this.pos++;
      } else if (escaped === "u") {
        const hex = this.text.slice(this.pos + 1, this.pos + 5);
        if (!/^[0-9a-fA-F]{0,4}$/.test(hex)) this.unexpected(path, "four hex digits after \\u");
        if (hex.length < 4) this.truncated(path);
        out += String.fromCharCode(Number.parseInt(hex, 16));
        this.pos += 5;
      } else {
        this.unexpected(path, 'a valid escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)');
      }
      runStart = this.pos;
    }
    if (out.includes("\u0000")) {
      this.pos = start;
      this.refuse(
        "nul_character",
        path,
        `${where} ${path} contains U+0000 (NUL), which cannot be stored; leave it out or use another character`,
      );
    }
    if (!out.isWellFormed()) {
      const at = this.pos;
      this.pos = start;
      this.refuse(
        "lone_surrogate",
        path,
        `the string ending at character ${at} contains an unpaired UTF-16 surrogate; send valid Unicode text`,
      );
    }
    return out;
  }

  private number(path: string): number {
    const start = this.pos;
    NUMBER.lastIndex = start;
    const match = NUMBER.exec(this.text);
    NUMBER_PREFIX.lastIndex = start;
    const prefix = NUMBER_PREFIX.exec(this.text)?.[0] ?? "";
    if (!match || prefix.length > match[0].length) {
      // A number cut off at the end of the text ("12." or "1e") is truncation, anything else malformed.
      if (start + prefix.length >= this.text.length) this.truncated(path);
      this.pos = start + (match?.[0].length ?? 0);
      this.unexpected(path, "a number such as 12, -3.5 or 1e3");
    }
    const lexeme = match[0];
    this.pos += lexeme.length;
    const value = Number(lexeme);
    const integerLiteral = !/[.eE]/.test(lexeme);
    if (integerLiteral && !Number.isSafeInteger(value)) {
      this.pos = start;
      this.refuse(
        "unsafe_integer",
        path,
        `the integer ${lexeme} is outside ±9007199254740991 (2^53 − 1) and would lose precision; send it as a string if the schema allows`,
      );
    }
    if (!Number.isFinite(value)) {
      this.pos = start;
      this.refuse("unsafe_integer", path, `the number ${lexeme} is too large for a double`);
    }
    return value;
  }

  private literal<T extends JsonValue>(word: string, value: T, path: string): T {
    const slice = this.text.slice(this.pos, this.pos + word.length);
    if (slice === word) {
      this.pos += word.length;
      return value;
    }
    if (this.pos + slice.length >= this.text.length && word.startsWith(slice)) this.truncated(path);
    return this.unexpected(path, "a value (object, array, string, number, true, false or null)");
  }

  private checkDepth(path: string, depth: number): void {
    if (depth > MAX_DEPTH)
      this.refuse("too_deep", path, `the arguments nest deeper than ${MAX_DEPTH} levels`);
  }

  private skipWhitespace(): void {
    for (;;) {
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else return;
    }
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private truncated(path: string): never {
    return this.refuse(
      "truncated",
      path,
      `the arguments end at character ${this.text.length} inside ${path === "$" ? "the JSON" : path}: they look truncated; send the complete JSON object`,
    );
  }

  private unexpected(path: string, expected: string): never {
    const found = this.text.codePointAt(this.pos);
    const shown = found === undefined ? "end of text" : JSON.stringify(String.fromCodePoint(found));
    return this.refuse(
      "malformed",
      path,
      `not valid JSON: at character ${this.pos} (in ${path}) expected ${expected}, found ${shown}`,
    );
  }

  private refuse(problemClass: IJsonProblemClass, path: string, message: string): never {
    throw new Refusal({ class: problemClass, message, position: this.pos, path });
  }
}

const ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

function describe(value: JsonValue): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
