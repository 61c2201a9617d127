/**
 * The fake ERP's domain: material master records and stock per plant, and the seed data. No HTTP here;
 * `erp-state.ts` holds the mutable system and `server.ts` serves it. The finished goods are the products
 * the fake APS schedules (bracket-a, bracket-b, frame-c), so the two systems tell one story.
 */

/** A material master record. `plants` are the plants where the material is maintained (has stock). */
export interface Material {
  id: string;
  description: string;
  /** Unit of measure of every quantity of this material, e.g. `PC` (pieces) or `KG`. */
  baseUnit: string;
  materialGroup: "finished" | "raw";
  plants: string[];
}

/** Quantities of one material in one plant, in the material's base unit (SAP's three stock types). */
export interface StockQuantities {
  unrestricted: number;
  qualityInspection: number;
  blocked: number;
}

/** The stock of one material in one plant as the API returns it. `asOf` is RFC 3339. */
export interface StockLevel extends StockQuantities {
  materialId: string;
  plant: string;
  baseUnit: string;
  asOf: string;
}

/** The seed materials. */
export function seedMaterials(): Material[] {
  return [
    {
      id: "bracket-a",
      description: "Bracket A, zinc plated",
      baseUnit: "PC",
      materialGroup: "finished",
      plants: ["plant-a", "plant-b"],
    },
    {
      id: "bracket-b",
      description: "Bracket B, powder coated",
      baseUnit: "PC",
      materialGroup: "finished",
      plants: ["plant-a"],
    },
    {
      id: "frame-c",
      description: "Welded frame C",
      baseUnit: "PC",
      materialGroup: "finished",
      plants: ["plant-a"],
    },
    {
      id: "steel-coil-2mm",
      description: "Steel coil, 2 mm, DC01",
      baseUnit: "KG",
      materialGroup: "raw",
      plants: ["plant-a", "plant-b"],
    },
  ];
}

/** The seed stock, keyed by {@link stockKey}. */
export function seedStock(): Map<string, StockQuantities> {
  return new Map([
    [stockKey("bracket-a", "plant-a"), { unrestricted: 1450, qualityInspection: 50, blocked: 0 }],
    [stockKey("bracket-a", "plant-b"), { unrestricted: 300, qualityInspection: 0, blocked: 20 }],
    [stockKey("bracket-b", "plant-a"), { unrestricted: 620, qualityInspection: 0, blocked: 0 }],
    [stockKey("frame-c", "plant-a"), { unrestricted: 85, qualityInspection: 10, blocked: 5 }],
    [stockKey("steel-coil-2mm", "plant-a"), { unrestricted: 18_500, qualityInspection: 0, blocked: 0 }],
    [stockKey("steel-coil-2mm", "plant-b"), { unrestricted: 4_200, qualityInspection: 800, blocked: 0 }],
  ]);
}

/** The map key of a material's stock in a plant. */
export function stockKey(materialId: string, plant: string): string {
  return `${materialId}@${plant}`;
}
