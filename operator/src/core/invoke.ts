/**
 * Core.invoke: one tool call from an agent, decided and (maybe) executed — DESIGN §4 steps 2–10.
 *
 * How to call it (gateway, `POST /v1/invoke`):
 *
 *   const deps: CoreDeps = { clock, catalog, identities, approvals, executions, providers, audit,
 *                            logger, config: defaultCoreConfig };
 *   // after TokenReview (step 1) has authenticated the pod and found its session:
 *   const { answer, consumed } = await invoke(deps, session, call);   // call: InvokeCall (zod-parsed)
 *   // reply 200 with `answer` (an InvokeAnswer); add `consumed.toolCalls` / `consumed.writes` to the
 *   // session's status counters. A thrown error is a dependency failure (Postgres, API server): reply
 *   // 5xx; the agent may repeat the call — the execution identity makes the repeat safe.
 *
 * How to dispatch an Approved Approval (approval controller):
 *
 *   const result = await executeApproved(deps, { approval, session });  // session undefined if gone
 *   // result.kind "executed" → write status.execution from result.execution, phase from its state;
 *   // "refused" → phase result.phase (Stale | Expired | Rejected | Failed…) with reason result.reason.
 *
 * Postgres-backed ports: `createPostgresExecutionStore(pool)` and `createPostgresAuditLog(pool)` from
 * `operator/src/store/`. Kubernetes-backed ports (catalog, approvals, identities) and the HTTP
 * `ProviderClient` belong to `kube/` / `gateway/`.
 */
