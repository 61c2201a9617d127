/**
 * The file order of a vitest run: vitest's default (BaseSequencer), except that three files of the
 * `cluster` project go last — the chart's upgrade from an older commit (`test/e2e/upgrade.test.ts`)
 * and the chart's real install (`test/e2e/chart-install.test.ts`), which both own the release
 * `gatehouse` and leave the API for the files after them, then the operator's RBAC check against the
 * audit log (`test/e2e/operator-rbac-verbs.test.ts`) last, since that one compares the operator's
 * requests of every other file with the chart's rules.
 * It also provides the cluster project's files as `inject("clusterFiles")` (paths relative to the
 * repo root), so the RBAC check knows whether the whole suite ran before it.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    clusterFiles: string[];
  }
}

/** Files of the cluster project that run last, in this order. */
export const CLUSTER_LAST = [
  "test/e2e/upgrade.test.ts",
  "test/e2e/chart-install.test.ts",
  "test/e2e/operator-rbac-verbs.test.ts",
];

/** The sequencer `vitest.config.ts` sets as `sequence.sequencer`. */
export class ClusterSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) =>
      spec.project.name === "cluster" ? CLUSTER_LAST.indexOf(this.path(spec)) : -1;
    const cluster = sorted.filter((spec) => spec.project.name === "cluster");
    cluster[0]?.project.provide(
      "clusterFiles",
      cluster.map((spec) => this.path(spec)),
    );
    return [
      ...sorted.filter((spec) => rank(spec) < 0),
      ...sorted.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b)),
    ];
  }

  private path(spec: TestSpecification): string {
    return relative(this.ctx.config.root, spec.moduleId);
  }
}
