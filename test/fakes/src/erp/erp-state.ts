/**
 * The fake ERP's mutable state and its rules: which user may see which plant, material master reads,
 * stock reads per plant, and a log of every read (the effect tests assert on). Every operation returns
 * an `ErpAnswer` (HTTP status + JSON body) so the server only translates routes.
 */
import {
  type Material,
  type StockLevel,
  type StockQuantities,
  seedMaterials,
  seedStock,
  stockKey,
} from "./materials.ts";

/** What a user may see: the plants whose stock they may read. Every known user may read the material master. */
export interface ErpUser {
  plants: string[];
}

/** Default users of the reference story: alice sees both plants, bob only plant-a, carol none (DESIGN §1 personas). */
export const defaultErpUsers: Record<string, ErpUser> = {
  alice: { plants: ["plant-a", "plant-b"] },
  bob: { plants: ["plant-a"] },
  carol: { plants: [] },
};

/** What the ERP answers: an HTTP status and a JSON body (`{error, message}` when status ≥ 400). */
export interface ErpAnswer {
  statusCode: number;
  body: unknown;
}

/** One answered read, in order: who asked for what and the status they got. */
export interface ErpRead {
  user: string | undefined;
  what: "material" | "stock";
  materialId: string;
  plant?: string;
  statusCode: number;
}

function refusal(statusCode: number, error: string, message: string): ErpAnswer {
  return { statusCode, body: { error, message } };
}

/** The whole ERP in memory. */
export class ErpState {
  readonly materials = new Map<string, Material>();
  readonly stock: Map<string, StockQuantities>;
  readonly reads: ErpRead[] = [];
  readonly users: Record<string, ErpUser>;
  private readonly now: () => Date;

  constructor(options: { users?: Record<string, ErpUser>; now?: () => Date } = {}) {
    this.users = options.users ?? defaultErpUsers;
    this.now = options.now ?? (() => new Date());
    for (const material of seedMaterials()) this.materials.set(material.id, material);
    this.stock = seedStock();
  }

  /** The material master record. Needs a known user. */
  material(user: string | undefined, materialId: string): ErpAnswer {
    return this.logged({ user, what: "material", materialId }, () => {
      const denied = this.authenticate(user);
      if (denied) return denied;
      const material = this.materials.get(materialId);
      if (!material) return refusal(404, "not_found", `material ${materialId} does not exist`);
      return { statusCode: 200, body: { ...material, plants: [...material.plants] } };
    });
  }

  /** The stock of a material in a plant. Needs a known user who may see that plant. */
  stockLevel(user: string | undefined, materialId: string, plant: string): ErpAnswer {
    return this.logged({ user, what: "stock", materialId, plant }, () => {
      const denied = this.authenticate(user);
      if (denied) return denied;
      if (!this.users[user!]!.plants.includes(plant)) {
        return refusal(403, "forbidden", `user ${user} may not see stock of plant ${plant}`);
      }
      const material = this.materials.get(materialId);
      if (!material) return refusal(404, "not_found", `material ${materialId} does not exist`);
      const quantities = this.stock.get(stockKey(materialId, plant));
      if (!quantities)
        return refusal(404, "not_found", `material ${materialId} is not maintained in plant ${plant}`);
      const level: StockLevel = {
        materialId,
        plant,
        baseUnit: material.baseUnit,
        ...quantities,
        asOf: this.now().toISOString(),
      };
      return { statusCode: 200, body: level };
    });
  }

  /** Test hook: sets the stock of a material the plant maintains (a goods movement, in short). */
  setStock(materialId: string, plant: string, quantities: StockQuantities): ErpAnswer {
    const material = this.materials.get(materialId);
    if (!material) return refusal(404, "not_found", `material ${materialId} does not exist`);
    if (!material.plants.includes(plant)) {
      return refusal(404, "not_found", `material ${materialId} is not maintained in plant ${plant}`);
    }
    this.stock.set(stockKey(materialId, plant), { ...quantities });
    return { statusCode: 204, body: undefined };
  }

  /** 401 for an unknown or missing user, else undefined. */
  private authenticate(user: string | undefined): ErpAnswer | undefined {
    if (!user || !Object.hasOwn(this.users, user)) {
      return refusal(401, "unauthenticated", "header X-ERP-User names no known user");
    }
    return undefined;
  }

  private logged(read: Omit<ErpRead, "statusCode">, operation: () => ErpAnswer): ErpAnswer {
    const answer = operation();
    this.reads.push({ ...read, statusCode: answer.statusCode });
    return answer;
  }
}
