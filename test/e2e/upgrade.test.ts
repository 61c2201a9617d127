/**
 * The upgrade a platform engineer runs (docs/upgrading.md, "To the version with a migrate Job and
 * runtime logins" and "To the version with a gateway and a controller"): the chart and images of an
 * older commit — one operator Deployment, the owner's URL in its pods — installed as
 * chart-install.test.ts installs the working tree's, live state created under them — alice's session
 * waiting on a Pending Approval of a publish, and audit records — then `helm upgrade` to the working
 * tree's chart and images (a gateway and a controller Deployment) with the values the page names. Nothing may be lost: the Approval is decided after the upgrade and its
 * publish runs exactly once (the fake APS's own record), the session completes, and one audit chain
 * holds the records of both versions and verifies against the checkpoints.
 *
 * The older version's code is a `git worktree` of that commit under the run directory; its images
 * (`gatehouse/operator:…-<commit>`, `gatehouse/agent:<commit>`) are registered with the local node
 * to run from there (test/cluster/src/node/images.ts, registerImage).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR_NAMESPACE, WITNESS_KEY_SECRET } from "../../operator/src/api/well-known.ts";
import { createPostgresAuditLog } from "../../operator/src/store/audit/log.ts";
import { registerImage } from "../cluster/src/index.ts";
import { CHART_DIR } from "../helm/helm.ts";
import {
  type ChartEnvironment,
  CONTROLLER_DEPLOYMENT,
  GATEWAY_DEPLOYMENT,
  GATEWAY_POD_SELECTOR,
  migrateJobLogs,
  OPERATOR_POD_SELECTOR,
  podLogs,
  RELEASE,
  restoreApiAfterRelease,
  SINGLE_OPERATOR_LAYOUT,
  startChartEnvironment,
} from "./chart-environment.ts";
import { clusterInfo } from "./cluster-info.ts";
import type { ApprovalObject } from "./core-approvals.ts";
import { executionsOfSession } from "./core-records.ts";
import { NAMESPACE, REPO_ROOT } from "./environment.ts";
import { kubectlFor } from "./kubectl.ts";
import {
  checkpointsReachHead,
  createReferenceSession,
  decisionPatch,
  forgetEarlierCheckpoints,
  pendingApprovalOf,
  runAuditCli,
} from "./story.ts";

/** main just before the database-roles change, the first change of the least-privilege work. */
const OLD_COMMIT = "7adfe24";
/** The older version's images, tagged apart from the working tree's so the node runs the right code. */
const OLD_OPERATOR_TAG = `0.1.0-${OLD_COMMIT}`;
const OLD_OPERATOR_IMAGE = `gatehouse/operator:${OLD_OPERATOR_TAG}`;
const OLD_AGENT_IMAGE = `gatehouse/agent:${OLD_COMMIT}`;
/** The Secrets of the components' runtime logins, named as docs/upgrading.md names them. */
const CONTROLLER_LOGIN_SECRET = "gatehouse-database-controller-login";
const GATEWAY_LOGIN_SECRET = "gatehouse-database-gateway-login";
const SESSION = "upgrade-alice";

let env: ChartEnvironment;
let oldDir: string;
let oldLogin: string;
let sessionUid: string;
let approvalName: string;
/** The audit chain's head (seq) the older version left. */
let oldHead: number;
let upgrade: { code: number; stdout: string; stderr: string };
let upgradeSeconds: number;
/** Images of the operator pods and of the session's agent pod while the older version ran. */
let oldImages: { operator: Array<string | undefined>; agent: Array<string | undefined> };

function git(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd: REPO_ROOT }, (error, stdout, stderr) =>
      error ? reject(new Error(`git ${args.join(" ")}: ${stderr}`)) : resolve(stdout),
    );
  });
}

function npmCi(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir }, (error, _stdout, stderr) =>
      error ? reject(new Error(`npm ci in ${dir}: ${stderr}`)) : resolve(),
    );
  });
}

/**
 * The third-party packages a package-lock.json installs (its `node_modules/…` entries): where each goes,
 * with its version and content hash. Workspace links (`link: true`) are left out; dev flags too, which
 * say why a package is installed, not what.
 */
function installedPackages(lockPath: string): Map<string, string> {
  const lock = JSON.parse(readFileSync(lockPath, "utf8")) as {
    packages: Record<string, { version?: string; integrity?: string; link?: boolean }>;
  };
  return new Map(
    Object.entries(lock.packages)
      .filter(([path, entry]) => path.startsWith("node_modules/") && !entry.link)
      .map(([path, entry]) => [path, `${entry.version}@${entry.integrity}`]),
  );
}

/**
 * Whether the working tree's installed packages serve the older version: every package its lock
 * installs is installed at the same place, version and content here. Packages added since are
 * there too, unused by the older code, which imports only what its own lock names.
 */
function servesOlderVersion(olderLock: string, lock: string): boolean {
  const installed = installedPackages(lock);
  return [...installedPackages(olderLock)].every(([path, what]) => installed.get(path) === what);
}

/**
 * Makes `to` a node_modules of links into `from`, except the workspace links (`@gatehouse/operator` →
 * `../../operator`, relative), copied as they are so they point into `to`'s own checkout: the older
 * operator must import the older provider SDK, not the working tree's.
 */
function shareNodeModules(from: string, to: string): void {
  mkdirSync(to);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isDirectory() && entry.name.startsWith("@")) shareNodeModules(source, target);
    else symlinkSync(source, target);
  }
}

/** A checkout of {@link OLD_COMMIT} under the run directory, with node_modules. */
async function checkOutOldVersion(runDir: string): Promise<string> {
  const dir = join(runDir, `upgrade-from-${OLD_COMMIT}`);
  if (existsSync(dir))
    await git(["worktree", "remove", "--force", dir]).catch(() => rmSync(dir, { recursive: true }));
  await git(["worktree", "prune"]);
  await git(["cat-file", "-e", `${OLD_COMMIT}^{commit}`]).catch(() => {
    throw new Error(
      `commit ${OLD_COMMIT} (the older version this test upgrades from) is not in this clone: a shallow clone lacks it; run \`git fetch --unshallow\` (or clone with the full history of main)`,
    );
  });
  await git(["worktree", "add", "--detach", dir, OLD_COMMIT]);
  // The older version's third-party packages are all installed here, the same (those added since
  // beside them): the working tree's installed packages serve both, saving an `npm ci` of a minute or
  // more.
  if (servesOlderVersion(join(dir, "package-lock.json"), join(REPO_ROOT, "package-lock.json"))) {
    shareNodeModules(join(REPO_ROOT, "node_modules"), join(dir, "node_modules"));
  } else {
    await npmCi(dir);
  }
  return dir;
}

beforeAll(async () => {
  const cluster = clusterInfo();
  oldDir = await checkOutOldVersion(cluster.runDir);
  registerImage(cluster.runDir, OLD_OPERATOR_IMAGE, { like: "gatehouse/operator:0.1.0", codeDir: oldDir });
  registerImage(cluster.runDir, OLD_AGENT_IMAGE, { like: "gatehouse/agent:dev", codeDir: oldDir });

  // Earlier files ran this version's controller in plant-a, whose NetworkPolicies admit this version's
  // components by their labels. The older version only creates a policy that is missing and never
  // corrects one, so under it they would shut its own operator pods out of the providers: start, as a
  // cluster that ran the older version would, with the policies it makes itself.
  await kubectlFor(cluster.kubectlPath, cluster.kubeconfigPath).ok("admin", [
    "delete",
    "networkpolicy",
    "--all",
    "-n",
    NAMESPACE,
    "--ignore-not-found",
  ]);
  env = await startChartEnvironment(cluster, {
    chartDir: join(oldDir, "charts/gatehouse"),
    layout: SINGLE_OPERATOR_LAYOUT,
    image: OLD_OPERATOR_IMAGE,
    // The older chart's values: the owner's URL (its pods migrate with it at start) and the URL of a
    // login that is a member of gatehouse_operator, as that version's chart documented.
    values: async ({ database, ownerUrl, pool, podUrl }) => {
      oldLogin = `${database}_operator`;
      const password = `p${Date.now().toString(36)}`;
      // gatehouse_operator is cluster-global; an earlier migration on this server may have created it.
      await pool.query(
        `DO $$ BEGIN CREATE ROLE gatehouse_operator NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
      );
      await pool.query(`CREATE ROLE ${oldLogin} LOGIN PASSWORD '${password}' IN ROLE gatehouse_operator`);
      const login = new URL(ownerUrl);
      login.username = oldLogin;
      login.password = password;
      return {
        database: { url: podUrl(ownerUrl), operatorUrl: podUrl(login.toString()) },
        image: { tag: OLD_OPERATOR_TAG },
        agent: { image: OLD_AGENT_IMAGE },
      };
    },
  });
  await forgetEarlierCheckpoints(env.kubectl);
  // Earlier files' operators left this version's witness key in the namespace; the older version
  // never made one, so an install that upgrades from it has none. A key older than the older
  // version's unsigned checkpoints would make the upgraded witness refuse them as forged.
  await env.kubectl.ok("admin", [
    "delete",
    "secret",
    WITNESS_KEY_SECRET,
    "-n",
    OPERATOR_NAMESPACE,
    "--ignore-not-found",
  ]);

  // Live state under the older version: a session waiting on its Pending Approval, audit records.
  sessionUid = await createReferenceSession(env, SESSION);
  approvalName = (await pendingApprovalOf(env, sessionUid)).metadata.name;
  await env.kubectl.ok("admin", [
    "wait",
    "-n",
    NAMESPACE,
    "--for=jsonpath={.status.phase}=AwaitingApproval",
    "--timeout=120s",
    `agentsession/${SESSION}`,
  ]);
  await checkpointsReachHead(env);
  oldHead = (await createPostgresAuditLog(env.pool).head()).seq;
  const agentPods = await env.kubectl.json<{
    items: Array<{ metadata: { name: string }; spec: { containers: Array<{ image: string }> } }>;
  }>("admin", ["get", "pods", "-n", NAMESPACE]);
  oldImages = {
    operator: (await liveReleasePods(SINGLE_OPERATOR_LAYOUT.candidates)).map((p) => p.image),
    agent: agentPods.items
      .filter((p) => p.metadata.name.startsWith(`${SESSION}-agent-`))
      .map((p) => p.spec.containers[0]?.image),
  };

  // docs/upgrading.md: each component's login URL in a Secret, then the upgrade. The logins do not
  // exist yet: the migrate Job creates them (the owner here may create roles).
  for (const [secret, url] of [
    [CONTROLLER_LOGIN_SECRET, env.runtimeUrls.controller],
    [GATEWAY_LOGIN_SECRET, env.runtimeUrls.gateway],
  ] as const) {
    const podSide = new URL(url);
    podSide.hostname = env.cluster.bridgeIP;
    podSide.port = String(env.databaseForwarder.port);
    // A run that was killed may have left it (the environment's stop deletes the rest).
    await env.kubectl.ok("admin", [
      "delete",
      "secret",
      secret,
      "-n",
      OPERATOR_NAMESPACE,
      "--ignore-not-found",
    ]);
    await env.kubectl.ok("admin", [
      "create",
      "secret",
      "generic",
      secret,
      "-n",
      OPERATOR_NAMESPACE,
      `--from-literal=url=${podSide.toString()}`,
    ]);
  }
  const started = Date.now();
  upgrade = await env.helm([
    "upgrade",
    RELEASE,
    CHART_DIR,
    "-n",
    OPERATOR_NAMESPACE,
    // Not --reuse-values: it renders the new chart over the older release's values in place of the new
    // chart's defaults, so values the older chart lacked are nil (database.runtime.gateway.url).
    "--reset-then-reuse-values",
    "--set",
    "database.operatorSecretName=",
    "--set",
    "database.operatorUrl=",
    "--set",
    `database.runtime.controller.secretName=${CONTROLLER_LOGIN_SECRET}`,
    "--set",
    `database.runtime.gateway.secretName=${GATEWAY_LOGIN_SECRET}`,
    // A moved value the page says to drop (the chart refuses it, naming the new ones).
    "--set",
    "serviceAccount=null",
    // The harness's own: its component ServiceAccounts (bootstrap) are adopted and kept on uninstall.
    "--take-ownership",
    "--set-json",
    `gateway.serviceAccount=${JSON.stringify({ annotations: { "helm.sh/resource-policy": "keep" } })}`,
    "--set-json",
    `controller.serviceAccount=${JSON.stringify({ annotations: { "helm.sh/resource-policy": "keep" } })}`,
    // The older version's images were pinned by value; the new chart's default is its appVersion.
    "--set",
    "image.tag=",
    "--set",
    "agent.image=gatehouse/agent:dev",
  ]);
  if (upgrade.code === 0) {
    for (const deployment of [GATEWAY_DEPLOYMENT, CONTROLLER_DEPLOYMENT]) {
      await env.kubectl.ok("admin", [
        "rollout",
        "status",
        `deployment/${deployment}`,
        "-n",
        OPERATOR_NAMESPACE,
        "--timeout=180s",
      ]);
    }
  }
  upgradeSeconds = (Date.now() - started) / 1000;
}, 1_200_000);

afterAll(async () => {
  for (const secret of [CONTROLLER_LOGIN_SECRET, GATEWAY_LOGIN_SECRET]) {
    await env?.kubectl.run("admin", ["delete", "secret", secret, "-n", OPERATOR_NAMESPACE]);
  }
  // The older version's login goes first, while the environment's pool is open; its pods are gone.
  if (oldLogin) await env?.pool.query(`DROP ROLE IF EXISTS ${oldLogin}`).catch(() => {});
  await env?.stop();
  if (env) await restoreApiAfterRelease(env.kubectl);
  if (oldDir) await git(["worktree", "remove", "--force", oldDir]).catch(() => {});
});

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string } };
}

/** The release's pods of `selector` that are not being deleted: name, image and environment. */
async function liveReleasePods(
  selector: string,
): Promise<Array<{ name: string; image: string | undefined; env: EnvVar[] }>> {
  const pods = await env.kubectl.json<{
    items: Array<{
      metadata: { name: string; deletionTimestamp?: string };
      spec: { containers: Array<{ image: string; env?: EnvVar[] }> };
    }>;
  }>("admin", ["get", "pods", "-n", OPERATOR_NAMESPACE, "-l", selector]);
  return pods.items
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => ({
      name: p.metadata.name,
      image: p.spec.containers[0]?.image,
      env: p.spec.containers[0]?.env ?? [],
    }));
}

/** The working tree's operator image, which every live component pod runs once the upgrade is done. */
const NEW_OPERATOR_IMAGE = "gatehouse/operator:0.1.0";

/** The images of the live gateway and controller pods (two replicas each by default). */
async function newComponentImages(): Promise<Array<string | undefined>> {
  const pods = [
    ...(await liveReleasePods(GATEWAY_POD_SELECTOR)),
    ...(await liveReleasePods(OPERATOR_POD_SELECTOR)),
  ];
  return pods.map((p) => p.image);
}
const FOUR_NEW = [NEW_OPERATOR_IMAGE, NEW_OPERATOR_IMAGE, NEW_OPERATOR_IMAGE, NEW_OPERATOR_IMAGE];

describe(`helm upgrade from ${OLD_COMMIT} to the working tree, as docs/upgrading.md says`, () => {
  it("succeeds, running the migrate Job, and replaces the older pods with the working tree's, which hold the controller's login and no owner URL", async () => {
    expect(oldImages.operator).toEqual([OLD_OPERATOR_IMAGE, OLD_OPERATOR_IMAGE]);
    expect(oldImages.agent).toEqual([OLD_AGENT_IMAGE]);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    // The older pods migrated the schema up to its last migration; the Job adds this version's.
    const migrateLog = (await migrateJobLogs(env.kubectl, env.cluster)).text;
    const database = new URL(env.databaseUrl).pathname.slice(1);
    expect(migrateLog.match(/^applied .*/gm)).toEqual([
      "applied 0010_component_roles",
      "applied 0011_gateway_audit_kinds",
      "applied 0012_engine_approval_declined",
      "applied 0013_session_event_notices",
    ]);
    expect(migrateLog).toContain(`controller login ${database}_controller: created`);
    expect(migrateLog).toContain(`gateway login ${database}_gateway: created`);
    expect(await liveReleasePods(SINGLE_OPERATOR_LAYOUT.candidates)).toEqual([]);
    for (const [component, selector, secret] of [
      ["gateway", GATEWAY_POD_SELECTOR, GATEWAY_LOGIN_SECRET],
      ["controller", OPERATOR_POD_SELECTOR, CONTROLLER_LOGIN_SECRET],
    ] as const) {
      const live = await liveReleasePods(selector);
      expect(live.map((p) => p.image)).toEqual([NEW_OPERATOR_IMAGE, NEW_OPERATOR_IMAGE]);
      const logs = Object.values(
        podLogs(
          env.cluster,
          live.map((p) => p.name),
          component,
        ),
      );
      expect(logs).toHaveLength(2);
      for (const text of logs) expect(text).toContain(`"databaseLogin":"${database}_${component}"`);
      // The owner's URL and the older login's are out of the pods; each holds its own login only.
      for (const pod of live) {
        const databaseVars = pod.env.filter((v) => v.name.includes("DATABASE"));
        expect(databaseVars.map((v) => [v.name, v.valueFrom?.secretKeyRef?.name])).toEqual([
          ["DATABASE_URL", secret],
        ]);
      }
    }
    for (const secret of [`${RELEASE}-database`, `${RELEASE}-database-operator`]) {
      const got = await env.kubectl.run("admin", ["get", "secret", secret, "-n", OPERATOR_NAMESPACE]);
      expect(got.stderr, secret).toMatch(/NotFound/);
    }
    console.log(`helm upgrade and rollout: ${upgradeSeconds.toFixed(1)} s`);
  });

  it("lets the Approval created before it be approved after it, and runs the publish exactly once", async () => {
    // Against the working tree's pods only: a failed upgrade leaves the older ones running.
    expect(await newComponentImages()).toEqual(FOUR_NEW);
    const approval = await env.kubectl.json<ApprovalObject>("admin", [
      "get",
      "approval",
      approvalName,
      "-n",
      NAMESPACE,
    ]);
    expect(approval.status?.phase).toBe("Pending");
    expect(env.aps.publishes()).toEqual([]);
    await env.kubectl.ok("alice", [
      "patch",
      "approval",
      approvalName,
      "-n",
      NAMESPACE,
      "--type",
      "json",
      "-p",
      decisionPatch("alice", "Approve"),
    ]);
    await env.kubectl.ok("admin", [
      "wait",
      "-n",
      NAMESPACE,
      "--for=jsonpath={.status.phase}=Succeeded",
      "--timeout=240s",
      `approval/${approvalName}`,
    ]);
    expect(env.aps.publishes().filter((p) => p.user === "alice")).toHaveLength(1);
    const executions = await executionsOfSession(env.pool, sessionUid);
    expect(executions.filter((e) => e.approvalName === approvalName).map((e) => e.state)).toEqual([
      "succeeded",
    ]);
  });

  it("completes the session the older version started", async () => {
    // Against the working tree's pods only: a failed upgrade leaves the older ones running.
    expect(await newComponentImages()).toEqual(FOUR_NEW);
    await env.kubectl.ok("admin", [
      "wait",
      "-n",
      NAMESPACE,
      "--for=jsonpath={.status.phase}=Completed",
      "--timeout=240s",
      `agentsession/${SESSION}`,
    ]);
    const result = await env.kubectl.ok("admin", [
      "get",
      "agentsession",
      SESSION,
      "-n",
      NAMESPACE,
      "-o",
      "jsonpath={.status.result}",
    ]);
    expect(result.stdout).toContain("published as version");
  });

  it("keeps one audit chain of both versions' records that gatehouse-audit verify accepts", async () => {
    // Against the working tree's pods only: a failed upgrade leaves the older ones running.
    expect(await newComponentImages()).toEqual(FOUR_NEW);
    expect(oldHead).toBeGreaterThan(0);
    await checkpointsReachHead(env);
    const head = (await createPostgresAuditLog(env.pool).head()).seq;
    expect(head).toBeGreaterThan(oldHead);
    const cli = await runAuditCli(env);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/^audit chain intact/m);
    expect(cli.stdout).toContain(`${head} records from seq 1`);
  });
});

describe(`helm rollback to ${OLD_COMMIT}, as docs/upgrading.md says`, () => {
  it("brings the older pods back on the migrated schema with the older values, and the chain still verifies", async () => {
    // The page's one manual step: the older role's checkpoint privilege back, as the owner.
    const client = await env.pool.connect();
    try {
      await client.query("SET ROLE gatehouse_owner");
      await client.query("GRANT INSERT ON audit_checkpoints TO gatehouse_operator");
      await client.query("RESET ROLE");
    } finally {
      client.release();
    }
    // Revision 1 is the older install: helm rollback brings back its chart and its values alike.
    const rollback = await env.helm(["rollback", RELEASE, "1", "-n", OPERATOR_NAMESPACE]);
    expect(rollback.code, rollback.stderr).toBe(0);
    await env.kubectl.ok("admin", [
      "rollout",
      "status",
      `deployment/${SINGLE_OPERATOR_LAYOUT.deployments[0]}`,
      "-n",
      OPERATOR_NAMESPACE,
      "--timeout=180s",
    ]);
    const live = await liveReleasePods(SINGLE_OPERATOR_LAYOUT.candidates);
    expect(live.map((p) => p.image)).toEqual([OLD_OPERATOR_IMAGE, OLD_OPERATOR_IMAGE]);
    for (const pod of live) {
      expect(
        pod.env
          .filter((v) => v.name.includes("DATABASE"))
          .map((v) => [v.name, v.valueFrom?.secretKeyRef?.name]),
      ).toEqual([
        ["DATABASE_URL", `${RELEASE}-database`],
        ["GATEHOUSE_OPERATOR_DATABASE_URL", `${RELEASE}-database-operator`],
      ]);
    }
    const logs = Object.values(
      podLogs(
        env.cluster,
        live.map((p) => p.name),
        "operator",
      ),
    );
    expect(logs).toHaveLength(2);
    for (const text of logs) expect(text).toContain("No migrations to run!");
    const cli = await runAuditCli(env);
    expect(cli.code, cli.stderr).toBe(0);
  });
});
