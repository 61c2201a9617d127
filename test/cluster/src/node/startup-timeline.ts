import type { Logger } from "pino";

/**
 * The stages of a pod's first start on the local node, in order: the worker sees the pod (`seen`), its
 * network namespace, veth and address exist (`network`), NetworkPolicy rules that know its address are
 * in force (`policy`), its volumes are written (`volumes`), every app container's process has been
 * spawned (`spawned`), and a status saying Running has been written (`running`).
 */
export const STARTUP_STAGES = ["network", "policy", "volumes", "spawned", "running"] as const;
export type StartupStage = (typeof STARTUP_STAGES)[number];

/** The message of the log line {@link StartupTimeline} writes (the operator-sessions bench reads it). */
export const POD_STARTED_MESSAGE = "pod started";

/** The fields of that line: when the pod was seen (epoch ms) and each stage's time since then. */
export type PodStartedLine = { seenAt: number; msSinceSeen: Partial<Record<StartupStage, number>> };

/**
 * When each stage of one pod's first start was reached; logged once, at `running`, as
 * {@link POD_STARTED_MESSAGE} with {@link PodStartedLine}'s fields. A stage reached again (a restart,
 * a volume resync) keeps its first time.
 */
export class StartupTimeline {
  private readonly log: Logger;
  private readonly seenAt = Date.now();
  private readonly reached = new Map<StartupStage, number>();

  constructor(log: Logger) {
    this.log = log;
  }

  mark(stage: StartupStage): void {
    if (this.reached.has(stage)) return;
    this.reached.set(stage, Date.now());
    if (stage !== "running") return;
    const msSinceSeen = Object.fromEntries([...this.reached].map(([s, at]) => [s, at - this.seenAt]));
    const line: PodStartedLine = { seenAt: this.seenAt, msSinceSeen };
    this.log.info(line, POD_STARTED_MESSAGE);
  }
}
