/**
 * `make demo`: brings up the real local control plane (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler built from Go modules), the local node, Postgres, the fake APS, the model (the scripted
 * one, or a real OpenAI-compatible endpoint), the CRDs, the gateway and the controller, applies examples/gitops/overlays/plant-a, then plays
 * the reference story (story.ts) printing every command with its real output, and checks what the
 * story must show. It stays up for exploration until Ctrl-C; with DEMO_EXIT=1 it exits 0 once the story
 * has passed (1 otherwise). While it runs, the gateway and the controller are supervised as a kubelet
 * keeps restartPolicy Always containers (DEMO_RESTART_BACKOFF): one that exits — the controller does
 * when kube-apiserver is down past its Lease's renew deadline — is started again on the same ports.
 *
 * Environment:
 *   DEMO_EXIT=1        exit once the story has run (0 passed, 1 not)
 *   DATABASE_URL       the Postgres server to use, as an administrator who may create roles (default: the
 *                      local one on 127.0.0.1:5432, else embedded); gatehouse-migrate runs with it first
 *   OPENAI_BASE_URL    a real OpenAI-compatible endpoint instead of the scripted model; the gateway's
 *                      MODEL_ENDPOINTS then names it, with OPENAI_API_KEY (when set) in Secret
 *                      gatehouse-system/gatehouse-demo-model-key, which the gateway's model proxy reads
 *   OPENAI_MODEL       the model the sessions ask that endpoint for (default gpt-4o-mini)
 *   GATEHOUSE_RECORD_BENCH=1   record the demo's wall time in test/bench/results/control-plane.json
 */

import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { recordMeasurement } from "../bench/record.ts";
import {
  KUBELET_RESTART_BACKOFF,
  type RestartBackoff,
  startControlPlane,
  startLocalNode,
} from "../cluster/src/index.ts";
import { type Environment, NAMESPACE, startEnvironment } from "./environment.ts";
import { playReferenceStory, type StoryOptions, type StoryReport } from "./story.ts";

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

const MODEL_KEY_SECRET = "gatehouse-demo-model-key";

/**
 * The kubelet's back-off (10 s, doubling) with a 40 s cap instead of 5 min: someone is watching the
 * demo, and after an outage of the API server a component should be back within a minute of its
 * return, not five; a component that keeps failing costs a progress line and a process start every
 * 40 s on one machine, which is nothing.
 */
const DEMO_RESTART_BACKOFF: RestartBackoff = { ...KUBELET_RESTART_BACKOFF, maxDelayMs: 40_000 };

/** The real endpoint the environment asks for, if any. */
function realEndpoint(
  env: NodeJS.ProcessEnv,
): { baseURL: string; apiKey?: string; model: string } | undefined {
  if (!env.OPENAI_BASE_URL) return undefined;
  return {
    baseURL: env.OPENAI_BASE_URL,
    ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
    model: env.OPENAI_MODEL || "gpt-4o-mini",
  };
}

/** Each thing the story must have shown, with whether it did. */
function checksOf(report: StoryReport): Array<[string, boolean]> {
  const { alice, bob, audit, evidence } = report;
  const waitedThenCompleted = (phases: string[]) =>
    phases.includes("AwaitingApproval") &&
    phases.at(-1) === "Completed" &&
    phases.indexOf("AwaitingApproval") < phases.lastIndexOf("Completed");
  return [
    ["alice's session went through AwaitingApproval to Completed", waitedThenCompleted(alice.sessionPhases)],
    [
      "alice's Approval went from Pending to Succeeded",
      alice.approvalPhases[0] === "Pending" && alice.approvalPhases.at(-1) === "Succeeded",
    ],
    ["the APS published alice's plan exactly once", alice.publishes === 1],
    ["alice's status.result holds the agent's answer", alice.result.length > 0],
    [
      "bob's self-approved publish was refused by the APS: forbidden, final",
      bob.approvalPhases.at(-1) === "Failed" &&
        bob.execution?.state === "failed" &&
        bob.execution.errorKind === "forbidden",
    ],
    [
      "Core called the APS once for bob's publish and never retried; nothing was published",
      bob.publishExecutions.length === 1 && bob.publishes === 0,
    ],
    [
      "bob's agent reported the refusal in status.result",
      bob.result.length > 0 && waitedThenCompleted(bob.sessionPhases),
    ],
    ["the audit chain verifies against the ConfigMap's checkpoints", audit.ok && audit.checkpoints > 0],
    ["the audit chain alone names alice as the approver of the publish that ran", evidence.namesApprover],
  ];
}

function printExploration(env: Environment, kubeconfigPath: string, kubectlPath: string) {
  const lines = [
    "",
    bold("Everything stays up for exploration. In another shell:"),
    `  export KUBECONFIG=${kubeconfigPath}`,
    `  alias kubectl=${kubectlPath}        # the 1.34 kubectl built with the control plane`,
    "  kubectl config get-contexts                   # admin, alice, bob (planners), carol (approvers)",
    "  kubectl get gatehouse -A                      # every Gatehouse object",
    `  kubectl --context alice get agentsessions,approvals -n ${NAMESPACE}`,
    `  kubectl --context alice create -f examples/${NAMESPACE}/another-session.yaml   # then approve it as carol`,
    `  kubectl --context carol get approvals -n ${NAMESPACE}`,
    `  make logs POD=${NAMESPACE}/<pod>                # a pod's container logs from the local node`,
    `  make audit DATABASE_URL=${env.runtimeUrls.controller} ARGS="--kubeconfig ${kubeconfigPath} --context admin"   # as the controller's runtime login`,
    `  PATH=$PWD/bin:$PATH kubectl gatehouse transcript <session> -n ${NAMESPACE} --context alice   # through the API server`,
    `  kubectl --context alice get --raw /apis/transcripts.gatehouse.dev/v1alpha1/namespaces/${NAMESPACE}/agentsessiontranscripts/<session>`,
    `  export DATABASE_URL=${env.databaseUrl}   # the transcript's table: SELECT * FROM session_events`,
    `  export PATH=$(scripts/ensure-node.sh):$PATH; npx gatehouse-audit show --approval <apr-…>   # one Approval's history from the chain`,
    `  npx gatehouse-audit lifecycle --kubeconfig ${kubeconfigPath} --context admin   # no Approval request lost its end`,
    `  curl -s ${env.controller.healthUrl}/metrics | grep ^gatehouse_   # the controller's metrics (the gateway's: ${env.gateway.healthUrl})`,
    `  less ${env.controller.logPath}   # the controller's log`,
    `  less ${env.gateway.logPath}   # the gateway's log`,
    "The gateway and the controller are started again when they exit (back-off 10 s doubling to 40 s).",
    "docs/walkthrough.md lists more. Ctrl-C stops everything (the database is kept).",
  ];
  for (const line of lines) console.log(line);
}

async function main(): Promise<number> {
  const started = Date.now();
  const endpoint = realEndpoint(process.env);
  console.log(bold("Gatehouse demo: the reference story on a real local control plane"));
  const cluster = await startControlPlane();
  const stops: Array<() => Promise<void>> = [() => cluster.stop()];
  let stopping: Promise<void> | undefined;
  const stopAll = () => {
    stopping ??= (async () => {
      for (const stop of stops.reverse())
        await stop().catch((error: unknown) => console.error(String(error)));
    })();
    return stopping;
  };
  // Ctrl-C, and a plain `kill`: either stops everything in order (the node's namespaces, bridge and
  // firewall table, the gateway and the controller, the control plane), so nothing is left on the host.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      console.log(`\nstopping (${signal})…`);
      void stopAll().then(() => {
        console.log("stopped: nothing of the demo is left running (its database is kept)");
        process.exit(0);
      });
    });
  }
  try {
    console.log(dim(`control plane up: ${cluster.serverURL} (kubeconfig ${cluster.kubeconfigPath})`));
    const node = await startLocalNode(cluster);
    stops.push(() => node.stop());
    console.log(dim("local node Ready"));
    const componentEnv: NodeJS.ProcessEnv = {
      // Checkpoints every few seconds, so the audit step can compare the head with one at once.
      AUDIT_CHECKPOINT_INTERVAL_SECONDS: "3",
      ...(endpoint
        ? {
            MODEL_ENDPOINTS: JSON.stringify([
              {
                name: "demo",
                baseURL: endpoint.baseURL,
                default: true,
                ...(endpoint.apiKey ? { keySecretRef: { name: MODEL_KEY_SECRET, key: "apiKey" } } : {}),
              },
            ]),
          }
        : {}),
    };
    const env = await startEnvironment(cluster, {
      database: "gatehouse_demo",
      keepDatabase: true,
      progress: (line) => console.log(dim(line)),
      componentEnv,
      restartBackoff: DEMO_RESTART_BACKOFF,
    });
    stops.push(() => env.stop());
    const options: StoryOptions = {};
    if (endpoint) {
      if (endpoint.apiKey) {
        // The key goes to a Secret in the operator's namespace, read by the gateway's model proxy; never printed.
        await env.kubectl.ok(
          "admin",
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: MODEL_KEY_SECRET, namespace: OPERATOR_NAMESPACE },
            stringData: { apiKey: endpoint.apiKey },
          }),
        );
      }
      options.model = endpoint.model;
      console.log(
        dim(`model: ${endpoint.model} at ${endpoint.baseURL} (OPENAI_BASE_URL), through the gateway`),
      );
    } else {
      console.log(dim("model: the scripted model plays scripted/reference-story"));
    }

    const report = await playReferenceStory(
      env,
      {
        say: (line) => console.log(/^\d\./.test(line) ? `\n${bold(line)}` : line),
        command: (result) => {
          console.log(`$ ${result.command}`);
          const text = (result.stdout + result.stderr).trimEnd();
          if (text) console.log(text);
        },
      },
      options,
    );
    const checks = checksOf(report);
    const passed = checks.every(([, ok]) => ok);
    const wallSeconds = (Date.now() - started) / 1000;
    console.log("");
    console.log(`alice's AgentSession: ${report.alice.sessionPhases.join(" → ")}`);
    console.log(`alice's Approval:     ${report.alice.approvalPhases.join(" → ")}`);
    console.log(`bob's AgentSession:   ${report.bob.sessionPhases.join(" → ")}`);
    console.log(`bob's Approval:       ${report.bob.approvalPhases.join(" → ")}`);
    for (const [what, ok] of checks) console.log(`${ok ? "✓" : "✗"} ${what}`);
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
    printExploration(env, cluster.kubeconfigPath, cluster.kubectlPath);
    await new Promise(() => {});
    return 0;
  } catch (error) {
    console.error(error);
    await stopAll();
    return 1;
  }
}

process.exitCode = await main();
