/**
 * Operator replicas for Core's crash tests: replace whatever runs by one new replica (with its own
 * environment, e.g. a test-only failpoint) and wait until it holds the leader Lease, so it is the one
 * that dispatches Approvals.
 */
import type { Environment, OperatorReplica } from "./environment.ts";
import { eventually } from "./story.ts";

/** The replicas a test file started and has not stopped yet. */
export interface Replicas {
  running: OperatorReplica[];
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
): Promise<OperatorReplica> {
  for (const replica of replicas.running) await replica.kill("SIGTERM");
  const replica = await env.startReplica(name, overrides);
  replicas.running = [replica];
  await leaderIs(env, replica);
  return replica;
}

/** Waits until `replica` holds Lease gatehouse-system/gatehouse-operator (after a crash, once it lapsed). */
export async function leaderIs(
  env: Environment,
  replica: OperatorReplica,
  timeoutMs = 120_000,
): Promise<void> {
  await eventually(`replica ${replica.name} to hold the leader Lease`, timeoutMs, async () => {
    const lease = await env.kubectl.run("admin", [
      "get",
      "lease",
      "gatehouse-operator",
      "-n",
      "gatehouse-system",
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    return lease.stdout.startsWith(`${replica.name}_`) ? true : undefined;
  });
}
