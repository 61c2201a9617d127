/**
 * The model's raw argument string → validated, canonical arguments (DESIGN §4 step 4). Parsing is strict
 * I-JSON (`i-json.ts`); validation is ajv (JSON Schema 2020-12, all errors, ajv-formats) against the
 * capability's `inputSchema`. Every refusal carries a message written for the model, so it can correct
 * the call and try again.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { canonicalJson, type JsonObject, sha256Hex } from "./canonical.ts";
import { type IJsonProblemClass, jsonPathMember, parseIJsonObject } from "./i-json.ts";

/** Why arguments were refused: an I-JSON class, `schema` (ajv said no) or `invalid_schema` (the capability's schema is unusable). */
export type ArgumentProblemClass = IJsonProblemClass | "schema" | "invalid_schema";

/** A refusal with a message for the model. */
export interface ArgumentProblem {
  class: ArgumentProblemClass;
  message: string;
}

/** Arguments that passed: the object, its RFC 8785 text and that text's sha256 hex (the arguments digest). */
export interface ParsedArguments {
  value: JsonObject;
  canonical: string;
  digest: string;
}

/** Result of {@link parseArguments} / {@link checkArguments}. */
export type ArgumentsResult = ({ ok: true } & ParsedArguments) | { ok: false; problem: ArgumentProblem };

/** At most this many schema errors are listed in one message. */
const MAX_LISTED_ERRORS = 8;

/**
 * Strict I-JSON parse of `raw` (see `i-json.ts` for each rejection), then canonicalization. Empty or
 * whitespace-only input is refused as `empty`; {@link checkArguments} decides whether a tool without
 * required properties accepts it as `{}`.
 */
export function parseArguments(raw: string): ArgumentsResult {
  const parsed = parseIJsonObject(raw);
  if (!parsed.ok)
    return { ok: false, problem: { class: parsed.problem.class, message: parsed.problem.message } };
  const canonical = canonicalJson(parsed.value);
  return { ok: true, value: parsed.value, canonical, digest: sha256Hex(canonical) };
}

/**
 * Parses `raw` and validates it against `inputSchema`. Empty input counts as `{}` when the schema
 * requires no property (models often send "" for tools without parameters) and is refused otherwise
 * ("empty-for-required", DESIGN §4 step 4).
 */
export function checkArguments(raw: string, inputSchema: Record<string, unknown>): ArgumentsResult {
  let parsed = parseArguments(raw);
  if (!parsed.ok && parsed.problem.class === "empty" && !requiresProperties(inputSchema)) {
    parsed = parseArguments("{}");
  }
  if (!parsed.ok) return parsed;
  const validation = validateArguments(inputSchema, parsed.value);
  return validation.ok ? parsed : validation;
}

/** Validates `value` against `schema` with ajv. Compiled validators are cached per schema (by content). */
export function validateArguments(
  schema: Record<string, unknown>,
  value: JsonObject,
): { ok: true } | { ok: false; problem: ArgumentProblem } {
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (error) {
    return {
      ok: false,
      problem: {
        class: "invalid_schema",
        message: `this tool's input schema cannot be used (${String(error)}); the call cannot be checked, try another tool`,
      },
    };
  }
  if (validate(value)) return { ok: true };
  const errors = (validate.errors ?? []).map(describeError);
  const unique = [...new Set(errors)];
  const listed = unique.slice(0, MAX_LISTED_ERRORS);
  const more = unique.length > listed.length ? `; and ${unique.length - listed.length} more` : "";
  return {
    ok: false,
    problem: {
      class: "schema",
      message: `the arguments do not match the tool's schema: ${listed.join("; ")}${more}`,
    },
  };
}

function requiresProperties(schema: Record<string, unknown>): boolean {
  return Array.isArray(schema.required) && schema.required.length > 0;
}

const addFormats = addFormatsModule.default;
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
addFormats(ajv);
const validators = new Map<string, ValidateFunction>();
/** Compiled schemas kept; provider manifests are small, so this bound is generous. */
const MAX_CACHED_VALIDATORS = 512;

function compile(schema: Record<string, unknown>): ValidateFunction {
  const key = sha256Hex(canonicalJson(schema));
  let validate = validators.get(key);
  if (!validate) {
    // Compile a copy without $id: two capabilities may share an $id with different content.
    const { $id: _ignored, ...withoutId } = schema;
    validate = ajv.compile(withoutId);
    if (validators.size >= MAX_CACHED_VALIDATORS) validators.delete(validators.keys().next().value!);
    validators.set(key, validate);
  }
  return validate;
}

/** One ajv error as `$.path: what is wrong`. */
function describeError(error: ErrorObject): string {
  const path = pointerToJsonPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return `${path}: missing required property ${JSON.stringify(params.missingProperty)}`;
    case "additionalProperties":
      return `${path}: unknown property ${JSON.stringify(params.additionalProperty)} is not allowed`;
    case "enum":
      return `${path}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `${path}: must be ${JSON.stringify(params.allowedValue)}`;
    case "type":
      return `${path}: must be of type ${String(params.type)}`;
    default:
      return `${path}: ${error.message ?? error.keyword}`;
  }
}

/** RFC 6901 JSON Pointer (ajv's `instancePath`) → JSONPath as used in i-json messages. */
function pointerToJsonPath(pointer: string): string {
  if (pointer === "") return "$";
  let path = "$";
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    path = /^(0|[1-9][0-9]*)$/.test(token) ? `${path}[${token}]` : jsonPathMember(path, token);
  }
  return path;
}
