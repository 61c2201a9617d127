/** The fake APS business system (production scheduling) used by provider tests, e2e and the demo. */
export {
  type ApsAnswer,
  type ApsRight,
  ApsState,
  type ApsStateOptions,
  defaultApsUsers,
  type KeyedOperation,
  type OperationRecord,
  type PlanVersions,
  type PublishEvent,
} from "./aps-state.ts";
export { type Plan, type PlanLine, type PlanStatus, type PlanVersion, seedPlans } from "./plans.ts";
export { DroppableOperation, type FakeAps, type FakeApsOptions, startFakeAps } from "./server.ts";
