/** The fake ERP business system (materials and stock per plant) used by provider tests, e2e and the demo. */
export { defaultErpUsers, type ErpAnswer, type ErpRead, ErpState, type ErpUser } from "./erp-state.ts";
export {
  type Material,
  type StockLevel,
  type StockQuantities,
  seedMaterials,
  seedStock,
} from "./materials.ts";
export { type FakeErp, type FakeErpOptions, startFakeErp } from "./server.ts";
