import { defineConfig } from "vitest/config";
import { ClusterSequencer } from "./test/cluster-sequencer.ts";

/**
 * The tests that start an engine's real binary (Pi, Codex) as a child process: no outside service either, but
 * seconds per file, so they are a project of their own (`engines`) that `make test` runs and `make
 * unit` does not.
 */
const ENGINE_PROCESS_TESTS = [
  "agent-image/src/conformance/**/*.subprocess.test.ts",
  "agent-image/src/engines/pi/**/*.test.ts",
  "agent-image/src/engines/codex/**/*.test.ts",
  "agent-image/src/engines/subprocess/**/*.test.ts",
];

/**
 * Four projects: `unit` (beside the code, no outside services), `engines` (the engines' real binaries
 * as child processes), `integration` (real Postgres, real HTTP; no control plane) and `cluster`
 * (integration and e2e tests that share one real control plane, started once by the global setup). The cluster project's files run one at a time, in vitest's order
 * except that the chart install and then the operator's RBAC audit check come last (the sequencer).
 */
export default defineConfig({
  test: {
    reporters: ["default", "./test/reporter.ts"],
    // vitest resolves the sequencer from the root config for every project.
    sequence: { sequencer: ClusterSequencer },
    projects: [
      {
        test: {
          name: "unit",
          // One module graph per worker instead of one per file: importing the operator's graph again
          // for each of 130 files was half of the project's time (100 s → 45 s). Forks, not threads:
          // tests that set process.env (KUBECONFIG, the in-cluster variables) must not share it with a
          // file running beside them. Each file restores what it changes (afterEach), so order does not
          // matter; `make unit-shuffled` runs the files in a random order to keep that true.
          pool: "forks",
          isolate: false,
          include: [
            "test/architecture.test.ts",
            "test/images.test.ts",
            "test/stands-alone.test.ts",
            "test/docs.test.ts",
            "test/file-size.test.ts",
            "test/layout.test.ts",
            "operator/src/**/*.test.ts",
            "agent-image/src/**/*.test.ts",
            "provider-images/*/src/**/*.test.ts",
            "test/fakes/src/**/*.test.ts",
            "test/cluster/src/**/*.test.ts",
            "examples/*/src/**/*.test.ts",
            // The fault campaign's pure parts; its run is a cluster file.
            "test/chaos/schedule.test.ts",
            "test/chaos/invariants.test.ts",
            // The benchmarks' pure parts (a benchmark itself runs under make bench).
            "test/bench/*.test.ts",
          ],
          exclude: ENGINE_PROCESS_TESTS,
        },
      },
      {
        test: {
          name: "engines",
          include: ENGINE_PROCESS_TESTS,
          pool: "forks",
          isolate: false,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: "cluster",
          include: [
            "test/cluster-tests/**/*.test.ts",
            "test/e2e/**/*.test.ts",
            "test/chaos/campaign.test.ts",
          ],
          globalSetup: ["test/cluster/src/global-setup.ts"],
          // Skips the files a non-local target (GATEHOUSE_E2E_TARGET) cannot run, before their hooks.
          runner: "./test/cluster/src/target-runner.ts",
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
