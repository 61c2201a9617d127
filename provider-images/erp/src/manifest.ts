/**
 * What the `erp` provider offers: two reads of the ERP, nothing that changes it (so it may also run as a
 * Sidecar, DESIGN §2). The second id is hyphenated on purpose — `erp.material-master.read` is the ERP's
 * own term, and its tool name `erp_material-master_read` exercises the id ↔ tool-name bijection.
 * Input schemas are strict (no extra properties): they are the model-facing tool contract.
 */
import type { CapabilityOffer, Manifest } from "@gatehouse/provider-sdk";

// SAP allows material numbers of up to 40 characters; the fake uses lowercase names such as bracket-a.
const materialId = {
  type: "string",
  description: "Material number, e.g. bracket-a or steel-coil-2mm.",
  pattern: "^[A-Za-z0-9][A-Za-z0-9._-]*$",
  maxLength: 40,
};

const plant = {
  type: "string",
  description: "Plant code, e.g. plant-a.",
  pattern: "^[a-z0-9]+(-[a-z0-9]+)*$",
  maxLength: 32,
};

const quantity = (description: string) => ({ type: "number", minimum: 0, description });

/** `erp.material.stock`: the current stock of one material in one plant. */
export const stockOffer: CapabilityOffer = {
  id: "erp.material.stock",
  description:
    "Read the current stock of a material in a plant: unrestricted, in quality inspection and blocked, " +
    "in the material's base unit.",
  effect: "read",
  mode: "sync",
  idempotency: "natural",
  inputSchema: {
    type: "object",
    properties: { materialId, plant },
    required: ["materialId", "plant"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      materialId: { type: "string" },
      plant: { type: "string" },
      baseUnit: { type: "string", description: "Unit of every quantity, e.g. PC (pieces) or KG." },
      unrestricted: quantity("Free to use."),
      qualityInspection: quantity("Waiting for quality inspection."),
      blocked: quantity("Blocked; not usable."),
      asOf: { type: "string", format: "date-time", description: "When the ERP read the stock." },
    },
    required: ["materialId", "plant", "baseUnit", "unrestricted", "qualityInspection", "blocked", "asOf"],
  },
};

/** `erp.material-master.read`: a material's master record (description, unit, group, plants). */
export const materialMasterOffer: CapabilityOffer = {
  id: "erp.material-master.read",
  description:
    "Read the master record of a material: its description, base unit, material group and the plants " +
    "where it is maintained (where stock can be read).",
  effect: "read",
  mode: "sync",
  idempotency: "natural",
  inputSchema: {
    type: "object",
    properties: { materialId },
    required: ["materialId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      id: { type: "string" },
      description: { type: "string" },
      baseUnit: { type: "string" },
      materialGroup: { type: "string" },
      plants: { type: "array", items: { type: "string" } },
    },
    required: ["id", "description", "baseUnit", "materialGroup", "plants"],
  },
};

/** The `erp` provider's manifest. `requiresIdentity` is false until identity binding lands. */
export const erpManifest: Manifest = {
  provider: "erp",
  version: "0.1.0",
  requiresIdentity: false,
  capabilities: [stockOffer, materialMasterOffer],
};
