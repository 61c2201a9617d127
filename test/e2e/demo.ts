/**
 * `make demo`: brings up the real local control plane (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler built from Go modules), the local node, Postgres, the fake APS and the scripted model,
 * the CRDs and the operator, then plays the reference story printing every kubectl command with its
 * real output. It stays up for exploration until Ctrl-C; with DEMO_EXIT=1 it exits 0 once the story
 * has passed (non-zero otherwise).
 */

import { recordMeasurement } from "../bench/record.ts";
import { startControlPlane, startLocalNode } from "../cluster/src/index.ts";
import { startEnvironment } from "./environment.ts";
import { playReferenceStory } from "./story.ts";

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

async function main(): Promise<number> {
  const started = Date.now();
  console.log(bold("Gatehouse demo: the reference story on a real local control plane"));
  const cluster = await startControlPlane();
  const stops: Array<() => Promise<void>> = [() => cluster.stop()];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => console.error(String(error)));
  };
  process.once("SIGINT", () => {
    console.log("\nstopping…");
    void stopAll().then(() => process.exit(0));
  });
  try {
    console.log(dim(`control plane up: ${cluster.serverURL} (kubeconfig ${cluster.kubeconfigPath})`));
    const node = await startLocalNode(cluster);
    stops.push(() => node.stop());
    console.log(dim("local node Ready"));
    const env = await startEnvironment(cluster, {
      database: "gatehouse_demo",
      keepDatabase: true,
      progress: (line) => console.log(dim(line)),
    });
    stops.push(() => env.stop());

    const report = await playReferenceStory(env, {
      say: (line) => console.log(`\n${bold(line)}`),
      command: (result) => {
        console.log(`$ ${result.command}`);
        const text = (result.stdout + result.stderr).trimEnd();
        if (text) console.log(text);
      },
    });
    const passed =
      report.sessionPhases.at(-1) === "Completed" &&
      report.approvalPhases.includes("Pending") &&
      report.approvalPhases.at(-1) === "Succeeded" &&
      report.publishes === 1 &&
      report.auditOk &&
      report.result.length > 0;
    const wallSeconds = (Date.now() - started) / 1000;
    console.log(`\nAgentSession phases: ${report.sessionPhases.join(" → ")}`);
    console.log(`Approval phases:     ${report.approvalPhases.join(" → ")}`);
    console.log(
      bold(passed ? `The story passed in ${wallSeconds.toFixed(1)} s.` : "The story did NOT pass."),
    );
    // `make bench` records the wall time; a plain demo leaves the checked-in results alone.
    if (passed && process.env.GATEHOUSE_RECORD_BENCH === "1") {
      recordMeasurement("demoWallSeconds", Math.round(wallSeconds * 10) / 10);
    }

    if (process.env.DEMO_EXIT === "1") {
      await stopAll();
      return passed ? 0 : 1;
    }
    console.log(`\nThe cluster stays up for exploration. In another shell:`);
    console.log(`  export KUBECONFIG=${cluster.kubeconfigPath}`);
    console.log(`  alias kubectl=${cluster.kubectlPath}`);
    console.log(`  kubectl get gatehouse -A            # every Gatehouse object`);
    console.log(`  kubectl --context alice get agentsessions,approvals -n plant-a`);
    console.log(`Ctrl-C stops everything.`);
    await new Promise(() => {});
    return 0;
  } catch (error) {
    console.error(error);
    await stopAll();
    return 1;
  }
}

process.exitCode = await main();
