import { defineConfig } from "vitest/config";

/**
 * Three projects: `unit` (beside the code, no outside services), `integration` (real Postgres, real
 * HTTP; no control plane) and `cluster` (integration and e2e tests that share one real control plane,
 * started once by the global setup).
 */
export default defineConfig({
  test: {
    reporters: ["default", "./test/reporter.ts"],
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "test/architecture.test.ts",
            "operator/src/**/*.test.ts",
            "agent-image/src/**/*.test.ts",
            "provider-images/*/src/**/*.test.ts",
            "test/fakes/src/**/*.test.ts",
            "test/cluster/src/**/*.test.ts",
          ],
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
          include: ["test/cluster-tests/**/*.test.ts", "test/e2e/**/*.test.ts"],
          globalSetup: ["test/cluster/src/global-setup.ts"],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
