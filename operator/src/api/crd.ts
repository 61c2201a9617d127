/**
 * Generates CustomResourceDefinitions from the zod schemas (DESIGN §2: the zod schemas are the single
 * source). The recipe: z.toJSONSchema with target openapi-3.0, then
 * post-processing into a structural schema
 * (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema).
 */
import { z } from "zod";
import { GROUP, type KindDefinition, VERSION } from "./kinds.ts";

type Schema = Record<string, unknown>;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * Turns zod's OpenAPI output into a structural schema: drops `additionalProperties: false` and
 * `$schema`, turns free-form records into `x-kubernetes-preserve-unknown-fields`, strips the ±2^53
 * bounds zod adds to `.int()`, and refuses constructs that are not structural ($ref, unions).
 * Throws Error naming the JSON path of anything it cannot map.
 */
export function structural(node: unknown, path = "$"): Schema {
  if (typeof node !== "object" || node === null || Array.isArray(node)) {
    throw new Error(`${path}: expected a schema object`);
  }
  const input = node as Schema;
  if ("$ref" in input || "anyOf" in input || "oneOf" in input || "allOf" in input) {
    throw new Error(`${path}: $ref and unions are not structural; restructure the zod schema`);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(input)) {
    if (key === "$schema" || key === "additionalProperties" || key === "propertyNames") continue;
    if ((key === "minimum" || key === "maximum") && (value === MAX_SAFE || value === -MAX_SAFE)) continue;
    if (key === "properties") {
      const props: Schema = {};
      for (const [name, child] of Object.entries(value as Schema))
        props[name] = structural(child, `${path}.${name}`);
      out.properties = props;
      continue;
    }
    if (key === "items") {
      out.items = structural(value, `${path}[]`);
      continue;
    }
    out[key] = value;
  }
  const additional = input.additionalProperties;
  if (input.type === "object" && !input.properties) {
    if (additional && typeof additional === "object" && (additional as Schema).type === "string") {
      out.additionalProperties = { type: "string" };
    } else {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
  }
  if (out.type === undefined && !out["x-kubernetes-preserve-unknown-fields"]) {
    throw new Error(`${path}: every node needs a type`);
  }
  return out;
}

/** JSON schema of one zod type, as a structural OpenAPI v3 schema. */
export function openApiOf(schema: z.ZodType, path: string): Schema {
  const raw = z.toJSONSchema(schema, {
    target: "openapi-3.0",
    io: "input",
    cycles: "throw",
    unrepresentable: "any",
  });
  return structural(raw, path);
}

/** The apiextensions.k8s.io/v1 CustomResourceDefinition of one kind. */
export function crdFor(def: KindDefinition): Schema {
  const spec = openApiOf(def.spec, `${def.kind}.spec`);
  if (def.specRules.length > 0) spec["x-kubernetes-validations"] = def.specRules;
  const status = openApiOf(def.status, `${def.kind}.status`);
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${def.plural}.${GROUP}`, labels: { "app.kubernetes.io/part-of": "gatehouse" } },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ["gatehouse"],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: def.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: spec,
                status: status,
              },
            },
          },
        },
      ],
    },
  };
}
