/**
 * The one JSON Schema compiler of the provider side: ajv for draft 2020-12 in strict mode (unknown
 * keywords and formats are errors, not silently ignored) with the formats of ajv-formats. The server
 * validates arguments with it and the contract-test kit compiles manifests with it, so a schema the kit
 * accepts is a schema the server can serve.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS; under nodenext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** A fresh strict ajv instance (draft 2020-12, all errors, ajv-formats). */
export function strictSchemaCompiler(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv;
}
