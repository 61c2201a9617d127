/**
 * Controller replicas for Core's crash tests: replace whatever controller runs by one new replica (with
 * its own environment, e.g. a test-only failpoint) and wait until it holds the leader Lease, so it is the
 * one that dispatches Approvals.
 */
import { LEADER_LEASE } from "../../operator/src/api/rbac.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import type { ComponentReplica, Environment } from "./environment.ts";
import { eventually } from "./story.ts";

/** The controller replicas a test file started and has not stopped yet. */
export interface Replicas {
  running: ComponentReplica[];
}

/**
 * Stops every running replica (SIGTERM: the leader releases its Lease) and starts replica `name` with
 * `overrides`; resolves once it is the leader. `name` must be unique within the environment.
 */
export async function replaceReplicas(
  env: Environment,
  replicas: Replicas,
  name: string,
  overrides: NodeJS.ProcessEnv,
): Promise<ComponentReplica> {
  for (const replica of replicas.running) await replica.kill("SIGTERM");
  const replica = await env.startReplica("controller", name, overrides);
  replicas.running = [replica];
  await leaderIs(env, replica);
  return replica;
}

/** Waits until controller `replica` holds the leader Lease (after a crash, once it lapsed). */
export async function leaderIs(
  env: Environment,
  replica: ComponentReplica,
  timeoutMs = 120_000,
): Promise<void> {
  await eventually(`replica ${replica.name} to hold the leader Lease`, timeoutMs, async () => {
    const lease = await env.kubectl.run("admin", [
      "get",
      "lease",
      LEADER_LEASE,
      "-n",
      OPERATOR_NAMESPACE,
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    return lease.stdout.startsWith(`${replica.name}_`) ? true : undefined;
  });
}
