/**
 * `resolve NAME --succeeded|--failed --reason`: settles the Unknown outcome of an Approval's execution
 * as the person found it in the business system — a JSON patch `add /spec/resolutions/-` in the name
 * the API server gives the caller (SelfSubjectReview), guarded by a `test` of the resolutions read;
 * admission (gatehouse-approval-resolve) checks the verb, the name, the phase and that it is the only
 * one. Then it waits (bounded) until the operator has applied it and prints the phase.
 */
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Resolution } from "../../api/approval.ts";
import { APPROVAL, type Approval, GROUP, VERSION } from "../../api/kinds.ts";
import { ApprovalCondition, ApprovalPhase } from "../../api/status/approval.ts";
import { type Connection, whoAmI } from "./connection.ts";
import { apiMessageOf } from "./decide.ts";
import type { Output } from "./output.ts";
import { EXIT } from "./usage.ts";

/** Options of {@link resolve}. */
export interface ResolveOptions {
  name: string;
  outcome: Resolution["outcome"];
  reason: string;
  /** Seconds to wait for the operator to apply it; 0: do not wait. */
  waitSeconds: number;
}

const POLL_MS = 500;

/** The JSON patch appending `resolution` after exactly `seen` (the resolutions as read). */
export function resolutionPatchOf(seen: readonly Resolution[], resolution: Resolution) {
  return [
    { op: "test", path: "/spec/resolutions", value: seen },
    { op: "add", path: "/spec/resolutions/-", value: resolution },
  ];
}

async function getApproval(connection: Connection, name: string): Promise<Approval> {
  return (await connection.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: connection.namespace,
    plural: APPROVAL.plural,
    name,
  })) as Approval;
}

/** `phase: Succeeded — Executed ResolvedByPerson: resolved by carol as Succeeded: …`. */
function phaseLine(approval: Approval): string {
  const executed = approval.status?.conditions?.find((c) => c.type === ApprovalCondition.Executed);
  const why = executed ? ` — Executed ${executed.reason}: ${executed.message}` : "";
  return `phase: ${approval.status?.phase ?? ApprovalPhase.Pending}${why}`;
}

/**
 * Appends the caller's resolution, waits for the operator (at most `waitSeconds`) and reports on
 * `output`. Returns 0 when the Approval settled as the caller said (or is still Unknown when the wait
 * ends), 1 when the API server refused it (its message printed) or the execution was settled
 * otherwise first.
 */
export async function resolve(
  connection: Connection,
  options: ResolveOptions,
  output: Output,
): Promise<number> {
  const where = `approval.${GROUP}/${options.name}`;
  try {
    const me = await whoAmI(connection);
    const resolution: Resolution = {
      resolver: me.username,
      outcome: options.outcome,
      reason: options.reason,
    };
    const seen = (await getApproval(connection, options.name)).spec.resolutions ?? [];
    await connection.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: connection.namespace,
        plural: APPROVAL.plural,
        name: options.name,
        body: resolutionPatchOf(seen, resolution),
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    output.out(
      `${where}: resolved ${options.outcome} by ${me.username}, appended as spec.resolutions[${seen.length}] in namespace ${connection.namespace}`,
    );
    const deadline = Date.now() + options.waitSeconds * 1000;
    let approval = await getApproval(connection, options.name);
    while (approval.status?.phase === ApprovalPhase.Unknown && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      approval = await getApproval(connection, options.name);
    }
    output.out(phaseLine(approval));
    const phase = approval.status?.phase;
    if (phase !== ApprovalPhase.Unknown && phase !== options.outcome) {
      output.err(
        `kubectl-gatehouse: Approval ${options.name} is ${phase}: its execution was settled otherwise before your resolution applied`,
      );
      return EXIT.refused;
    }
    return EXIT.ok;
  } catch (error) {
    output.err(`kubectl-gatehouse: resolve ${options.name} refused: ${apiMessageOf(error)}`);
    return EXIT.refused;
  }
}
