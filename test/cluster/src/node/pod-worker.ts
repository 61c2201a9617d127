import { mkdirSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import type { V1Container, V1Pod, V1PodCondition, V1Probe } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { HarnessError } from "../errors.ts";
import { apiStatusCode } from "../kube-errors.ts";
import { type BridgeAddressing, createPodNetwork, deletePodNetwork, type PodNetwork } from "../network.ts";
import type { PodPolicyEnforcement } from "../network-policy/enforcer.ts";
import { REPO_ROOT } from "../paths.ts";
import { ContainerRunner, execInNetns } from "./container.ts";
import { containerEnv } from "./env.ts";
import type { EventRecorder } from "./events.ts";
import {
  containerArgv,
  expandVariables,
  IMAGE_NOT_IN_MAP,
  imageNotInMapMessage,
  resolveImage,
} from "./images.ts";
import type { IpAllocator } from "./ip-allocator.ts";
import { asDate, type NodeClients, type ObjectReader, STRATEGIC_MERGE_PATCH } from "./kube-client.ts";
import { containerLogPath, type PodKey, podDir, podRootDir, podRootLink } from "./layout.ts";
import { type ContainerView, type PodPhase, podPhase, podStatusPatch, statusDrift } from "./pod-status.ts";
import { ReadinessProber } from "./probes.ts";
import { StartupTimeline } from "./startup-timeline.ts";
import type { ServiceAccountTokens } from "./tokens.ts";
import { syncVolumes } from "./volumes.ts";

/** What a pod worker uses from its node. */
export type PodWorkerDeps = {
  nodeName: string;
  runDir: string;
  clients: NodeClients;
  reader: ObjectReader;
  addressing: BridgeAddressing;
  apiServer: { host: string; port: number };
  ips: IpAllocator;
  /** NetworkPolicy enforcement: told of the pod's address, which it puts rules in force for first. */
  policy: PodPolicyEnforcement;
  tokens: ServiceAccountTokens;
  events: EventRecorder;
  log: Logger;
  /** Called once when the worker is done (pod deleted, or node shutting down). */
  onFinished: (uid: string) => void;
};

/** Level-triggered resync period while nothing else happens, in milliseconds. */
const RESYNC_MS = 1_000;
/** Volumes (and thereby ConfigMap/Secret contents) are re-rendered this often; tokens when due. */
const VOLUME_RESYNC_MS = 30_000;
/** Grace given to containers when the local node itself stops. */
const NODE_SHUTDOWN_GRACE_MS = 2_000;
const DEFAULT_GRACE_SECONDS = 30;
const DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline";
/** The log message of a pod's network namespace removed (its last teardown step; benchmarks wait for it). */
export const POD_NETWORK_REMOVED_MESSAGE = "pod network removed";

/**
 * Runs one pod bound to the local node, from first sight to final delete, as a level-triggered loop:
 * each pass reads the latest pod object and the container processes and moves one step — give the pod
 * a network namespace and address, write its volumes, run init containers in order (native sidecars are
 * started and kept running), start and restart app containers per restartPolicy (with back-off), enforce
 * activeDeadlineSeconds, stop sidecars once the app containers are done, and report status through
 * pods/status (a strategic-merge patch guarded by the pod's resourceVersion). On deletion: SIGTERM, the grace period, SIGKILL, final delete (gracePeriodSeconds 0,
 * uid precondition), network namespace removed.
 */
export class PodWorker {
  private pod: V1Pod;
  private readonly key: PodKey;
  private readonly deps: PodWorkerDeps;
  private readonly log: Logger;
  private readonly runners = new Map<string, ContainerRunner>();
  private readonly probers = new Map<string, ReadinessProber>();
  private readonly startupProbers = new Map<string, ReadinessProber>();
  /** Containers whose startup probe has passed since they last started. */
  private readonly startedOk = new Set<string>();
  private readonly hurry = new AbortController();
  private readonly reported = new Set<string>();
  private removed = false;
  private shuttingDown = false;
  private network: (PodNetwork & { slot: number }) | undefined;
  private policyInForce = false;
  private volumesSyncedAt = 0;
  private volumesReady = false;
  private setupRetryAt = 0;
  private setupFailures = 0;
  private setupProblem: string | undefined;
  private startTime: Date | undefined;
  private terminal: { phase: PodPhase; reason?: string; message?: string } | undefined;
  private firstPass = true;
  private initialized = false;
  private podIP: string | undefined;
  private lastPatch: string | undefined;
  private lastWritten: Record<string, unknown> | undefined;
  private writtenConditions: V1PodCondition[] = [];
  private kicked = false;
  private wake: (() => void) | undefined;
  private readonly startup: StartupTimeline;
  /** Resolves when the worker has finished. */
  readonly done: Promise<void>;

  constructor(pod: V1Pod, deps: PodWorkerDeps) {
    this.pod = pod;
    this.deps = deps;
    this.key = {
      namespace: pod.metadata?.namespace ?? "default",
      name: pod.metadata?.name ?? "",
      uid: pod.metadata?.uid ?? "",
    };
    this.log = deps.log.child({ namespace: this.key.namespace, name: this.key.name, uid: this.key.uid });
    this.startup = new StartupTimeline(this.log);
    const kick = (): void => this.kick();
    for (const c of pod.spec?.initContainers ?? []) {
      const role = c.restartPolicy === "Always" ? "sidecar" : "init";
      this.runners.set(c.name, new ContainerRunner(c.name, c.image ?? "", role, kick));
    }
    for (const c of pod.spec?.containers ?? []) {
      this.runners.set(c.name, new ContainerRunner(c.name, c.image ?? "", "main", kick));
    }
    this.done = this.loop();
  }

  /** Hands the worker the latest version of its pod object. */
  update(pod: V1Pod): void {
    this.pod = pod;
    if (this.network) this.deps.policy.podChanged(this.key.uid, pod);
    this.kick();
  }

  /** The pod object is gone from the API server (force-deleted): stop without waiting for the grace period. */
  objectRemoved(): void {
    this.removed = true;
    this.hurry.abort();
    this.kick();
  }

  /** Stops the pod's processes quickly and releases its network, without touching the API (node exit). */
  shutdown(): Promise<void> {
    this.shuttingDown = true;
    this.hurry.abort();
    this.kick();
    return this.done;
  }

  private kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.kicked = false;
      try {
        if (await this.sync()) break;
      } catch (err) {
        this.log.error({ err }, "pod sync failed; retrying");
      }
      if (!this.kicked) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RESYNC_MS);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
    this.deps.onFinished(this.key.uid);
  }

  /** One pass; true when the worker is finished. */
  private async sync(): Promise<boolean> {
    if (this.shuttingDown) {
      await this.stopAll(NODE_SHUTDOWN_GRACE_MS);
      await this.teardown();
      return true;
    }
    if (this.removed) {
      await this.stopAll(this.graceSeconds() * 1000);
      await this.teardown();
      return true;
    }
    if (this.pod.metadata?.deletionTimestamp) {
      await this.stopAll(this.graceSeconds(true) * 1000);
      if (this.lastPatch !== undefined) await this.writeStatus();
      if (!(await this.finalDelete())) return false;
      await this.teardown();
      return true;
    }
    if (this.firstPass) {
      this.firstPass = false;
      const phase = this.pod.status?.phase;
      if (phase === "Succeeded" || phase === "Failed") {
        this.terminal = { phase };
        return false;
      }
      this.startTime = asDate(this.pod.status?.startTime) ?? new Date();
    }
    if (this.terminal) {
      if (this.lastPatch !== undefined) await this.writeStatus();
      return false;
    }
    if (!(await this.ensureSandbox())) {
      await this.writeStatus();
      return false;
    }
    if (this.deadlineExceeded()) {
      this.deps.events.emit(this.pod, "Normal", "DeadlineExceeded", DEADLINE_MESSAGE);
      await this.stopAll(this.graceSeconds() * 1000);
      await this.finish({ phase: "Failed", reason: "DeadlineExceeded", message: DEADLINE_MESSAGE });
      return false;
    }
    const init = await this.runInitContainers();
    this.initialized = init.initialized;
    if (init.initialized) await this.runAppContainers();
    const phase = podPhase(this.restartPolicy(), init.initialized, init.failedForGood, this.views("main"));
    if (phase === "Succeeded" || phase === "Failed") {
      await this.stopSidecars(this.graceSeconds() * 1000);
      await this.finish({ phase });
      return false;
    }
    this.dropStaleProbers();
    await this.writeStatus();
    return false;
  }

  private async finish(terminal: { phase: PodPhase; reason?: string; message?: string }): Promise<void> {
    this.terminal = terminal;
    const now = new Date();
    for (const runner of this.runners.values()) runner.terminateUnstarted(now);
    this.dropStaleProbers();
    await this.writeStatus();
    await this.releaseNetwork();
  }

  /** Network namespace, address and volumes; false while they are not ready (retried with back-off). */
  private async ensureSandbox(): Promise<boolean> {
    const now = Date.now();
    const tokenDue = (this.deps.tokens.nextRefreshAt(this.key.uid) ?? Number.POSITIVE_INFINITY) <= now;
    if (
      this.network &&
      this.policyInForce &&
      this.volumesReady &&
      now - this.volumesSyncedAt < VOLUME_RESYNC_MS &&
      !tokenDue
    ) {
      return true;
    }
    if (now < this.setupRetryAt) return this.volumesReady;
    try {
      if (!this.network) {
        const address = this.deps.ips.allocate();
        try {
          const net = await createPodNetwork(this.deps.addressing, address.slot, address.ip);
          this.network = { ...net, slot: address.slot };
          this.podIP = net.ip;
        } catch (err) {
          this.deps.ips.release(address.slot);
          throw err;
        }
        this.log.info({ podIP: address.ip, netns: this.network.netns }, "pod network ready");
        this.startup.mark("network");
      }
      if (!this.policyInForce) {
        // No process may run before the pod's NetworkPolicy rules (and its peers' rules naming it) do.
        await this.deps.policy.podAddressed(this.key.uid, this.pod, this.network.ip);
        this.policyInForce = true;
        this.startup.mark("policy");
      }
      await syncVolumes(this.pod, this.key, {
        runDir: this.deps.runDir,
        reader: this.deps.reader,
        tokens: this.deps.tokens,
        podIP: this.network.ip,
        hostIP: this.deps.addressing.bridgeIP,
      });
      this.volumesReady = true;
      this.volumesSyncedAt = now;
      this.startup.mark("volumes");
      this.setupFailures = 0;
      this.setupProblem = undefined;
      return true;
    } catch (err) {
      this.setupFailures++;
      this.setupRetryAt = now + Math.min(500 * 2 ** this.setupFailures, 10_000);
      this.setupProblem = err instanceof Error ? err.message : String(err);
      if (!this.volumesReady) {
        for (const runner of this.runners.values()) runner.wait("ContainerCreating", this.setupProblem);
      }
      this.log.warn({ err }, "pod setup failed; will retry");
      return this.volumesReady;
    }
  }

  private deadlineExceeded(): boolean {
    const seconds = this.pod.spec?.activeDeadlineSeconds;
    if (seconds === undefined || !this.startTime) return false;
    return Date.now() - this.startTime.getTime() >= seconds * 1000;
  }

  /** Regular init containers in order, to completion; sidecars started and kept running. */
  private async runInitContainers(): Promise<{ initialized: boolean; failedForGood: boolean }> {
    for (const spec of this.pod.spec?.initContainers ?? []) {
      const runner = this.runner(spec.name);
      if (runner.role === "sidecar") {
        await this.ensureRunning(runner, spec);
        // The next container waits until this sidecar has started (its startup probe passed).
        if (!this.hasStarted(spec)) return { initialized: false, failedForGood: false };
        continue;
      }
      const exit = runner.state.kind === "terminated" ? runner.state : undefined;
      if (exit?.exitCode === 0) continue;
      if (runner.running) return { initialized: false, failedForGood: false };
      if (exit && this.restartPolicy() === "Never") return { initialized: false, failedForGood: true };
      await this.ensureRunning(runner, spec);
      return { initialized: false, failedForGood: false };
    }
    return { initialized: true, failedForGood: false };
  }

  private async runAppContainers(): Promise<void> {
    for (const spec of this.pod.spec?.containers ?? []) {
      const runner = this.runner(spec.name);
      if (runner.running) continue;
      if (!runner.everStarted || this.willRestart(runner)) await this.ensureRunning(runner, spec);
    }
    if ([...this.runners.values()].every((r) => r.role !== "main" || r.everStarted)) {
      this.startup.mark("spawned");
    }
  }

  /** Starts `runner` unless it runs, is backing off, or cannot be configured (shown as waiting). */
  private async ensureRunning(runner: ContainerRunner, spec: V1Container): Promise<void> {
    if (runner.running || !this.network) return;
    const now = Date.now();
    if (runner.everStarted && now < runner.restartNotBefore) {
      const seconds = Math.ceil((runner.restartNotBefore - now) / 1000);
      if (runner.state.kind !== "waiting") {
        this.deps.events.emit(
          this.pod,
          "Warning",
          "BackOff",
          `Back-off restarting failed container ${spec.name}`,
          spec.name,
        );
      }
      runner.wait(
        "CrashLoopBackOff",
        `back-off ${seconds}s restarting failed container=${spec.name} pod=${this.key.name}`,
      );
      return;
    }
    let env: Record<string, string>;
    try {
      env = await containerEnv(this.pod, spec, {
        reader: this.deps.reader,
        podIP: this.network.ip,
        hostIP: this.deps.addressing.bridgeIP,
        podRoot: this.linkedRoot(),
        apiServerHost: this.deps.apiServer.host,
        apiServerPort: this.deps.apiServer.port,
        path: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      });
    } catch (err) {
      if (!(err instanceof HarnessError)) throw err;
      runner.wait("CreateContainerConfigError", err.message);
      this.reportOnce(`config:${spec.name}`, "Failed", `Error: ${err.message}`, spec.name);
      return;
    }
    const image = resolveImage(this.deps.runDir, spec.image ?? "");
    const argv = image && containerArgv(spec, env, process.execPath, image.command);
    if (!image || !argv) {
      const message = imageNotInMapMessage(spec.image ?? "");
      runner.wait(IMAGE_NOT_IN_MAP, message);
      this.reportOnce(`image:${spec.name}`, "Failed", message, spec.name);
      return;
    }
    runner.start({
      argv,
      // The image's ENV under the pod's, as a container runtime merges them.
      env: { ...image.env, ...env },
      cwd: image.cwd,
      netns: this.network.netns,
      logPath: containerLogPath(this.deps.runDir, this.key, spec.name),
    });
    this.log.info({ container: spec.name, restartCount: runner.restartCount }, "container started");
    this.deps.events.emit(this.pod, "Normal", "Started", `Started container ${spec.name}`, spec.name);
    this.probers.get(spec.name)?.stop();
    this.probers.delete(spec.name);
    this.startupProbers.get(spec.name)?.stop();
    this.startupProbers.delete(spec.name);
    this.startedOk.delete(spec.name);
    if (runner.role === "init") return;
    const startReadiness = (): void => {
      if (!spec.readinessProbe) return;
      const prober = this.prober(spec, spec.readinessProbe, env, () => this.kick());
      this.probers.set(spec.name, prober);
      prober.start();
    };
    if (!spec.startupProbe) {
      startReadiness();
      return;
    }
    // Readiness is probed only once the startup probe has passed, which it does once (kubelet semantics,
    // pkg/kubelet/prober/worker.go); a native sidecar holds back the next container until then.
    const startup = this.prober(spec, spec.startupProbe, env, () => {
      if (!startup.ready) return;
      this.startedOk.add(spec.name);
      startup.stop();
      this.startupProbers.delete(spec.name);
      startReadiness();
      this.kick();
    });
    this.startupProbers.set(spec.name, startup);
    startup.start();
  }

  /** A prober of `probe` for container `spec`, in the pod's namespace with the container's env. */
  private prober(
    spec: V1Container,
    probe: V1Probe,
    env: Record<string, string>,
    onChange: () => void,
  ): ReadinessProber {
    const network = this.network;
    if (!network) throw new HarnessError("internal", "probing a container of a pod without a network");
    return new ReadinessProber({
      probe,
      podIP: network.ip,
      ports: spec.ports ?? [],
      // As the kubelet does, `$(VAR)` in an exec probe's command expands to the container's env.
      exec: async (command, timeoutMs) => {
        const argv = command.map((part) => expandVariables(part, env));
        const cwd = resolveImage(this.deps.runDir, spec.image ?? "")?.cwd ?? REPO_ROOT;
        return (await execInNetns(network.netns, argv, { env, cwd, timeoutMs })) === 0;
      },
      onChange,
      log: this.log.child({ container: spec.name }),
    });
  }

  /** Whether a running container has started: it has no startup probe, or that probe has passed. */
  private hasStarted(spec: V1Container): boolean {
    return this.runner(spec.name).running && (!spec.startupProbe || this.startedOk.has(spec.name));
  }

  private dropStaleProbers(): void {
    for (const probers of [this.probers, this.startupProbers]) {
      for (const [name, prober] of probers) {
        if (!this.runner(name).running) {
          prober.stop();
          probers.delete(name);
        }
      }
    }
  }

  private willRestart(runner: ContainerRunner): boolean {
    if (runner.running || !runner.everStarted || this.terminal) return false;
    if (runner.role === "sidecar") return true;
    const exit = runner.lastExit;
    switch (this.restartPolicy()) {
      case "Always":
        return runner.role === "main";
      case "OnFailure":
        return exit !== undefined && exit.exitCode !== 0;
      default:
        return false;
    }
  }

  /** SIGTERM to app and init containers, the grace period, SIGKILL; then sidecars in reverse order. */
  private async stopAll(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    const first = [...this.runners.values()].filter((r) => r.role !== "sidecar");
    await Promise.all(first.map((r) => this.stopOne(r, graceMs)));
    await this.stopSidecars(Math.max(deadline - Date.now(), NODE_SHUTDOWN_GRACE_MS));
    for (const prober of [...this.probers.values(), ...this.startupProbers.values()]) prober.stop();
    this.probers.clear();
    this.startupProbers.clear();
  }

  private async stopSidecars(graceMs: number): Promise<void> {
    const sidecars = [...this.runners.values()].filter((r) => r.role === "sidecar").reverse();
    for (const sidecar of sidecars) await this.stopOne(sidecar, graceMs);
  }

  private async stopOne(runner: ContainerRunner, graceMs: number): Promise<void> {
    if (!runner.running) return;
    if (!this.shuttingDown) {
      this.deps.events.emit(this.pod, "Normal", "Killing", `Stopping container ${runner.name}`, runner.name);
    }
    await runner.stop(graceMs, this.hurry.signal);
    this.log.info({ container: runner.name, state: runner.state }, "container stopped");
  }

  /** DELETE with gracePeriodSeconds 0 and the pod's uid as precondition; true when the pod is gone. */
  private async finalDelete(): Promise<boolean> {
    try {
      await this.deps.clients.core.deleteNamespacedPod({
        namespace: this.key.namespace,
        name: this.key.name,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: this.key.uid } },
      });
      this.log.info("pod deleted");
      return true;
    } catch (err) {
      const code = apiStatusCode(err);
      if (code === 404 || code === 409) return true;
      this.log.warn({ err }, "final delete failed; will retry");
      return false;
    }
  }

  /** The pod root's short path (layout.ts podRootLink), linked on first use. */
  private linkedRoot(): string {
    const link = podRootLink(this.deps.runDir, this.key);
    mkdirSync(dirname(link), { recursive: true });
    rmSync(link, { force: true });
    symlinkSync(podRootDir(this.deps.runDir, this.key), link);
    return link;
  }

  private async teardown(): Promise<void> {
    for (const prober of [...this.probers.values(), ...this.startupProbers.values()]) prober.stop();
    this.probers.clear();
    this.startupProbers.clear();
    await this.releaseNetwork();
    this.deps.tokens.forget(this.key.uid);
    const dir = podDir(this.deps.runDir, this.key);
    for (const sub of ["root", "volumes"]) rmSync(join(dir, sub), { recursive: true, force: true });
    rmSync(podRootLink(this.deps.runDir, this.key), { force: true });
  }

  private async releaseNetwork(): Promise<void> {
    if (!this.network) return;
    await deletePodNetwork(this.network);
    // Forgotten before the address can go to another pod, which then waits for rules without this one.
    this.deps.policy.podReleased(this.key.uid);
    this.policyInForce = false;
    this.deps.ips.release(this.network.slot);
    this.log.info({ netns: this.network.netns }, POD_NETWORK_REMOVED_MESSAGE);
    this.network = undefined;
  }

  /**
   * Patches pods/status when what we would report has changed, or when the stored status no longer says
   * it (someone else overwrote it, e.g. the node lifecycle controller's Ready=False while the node was
   * NotReady): as the kubelet's status manager, the worker keeps its desired status and syncs it until
   * the API server has it. A failed write is retried on the next pass.
   */
  private async writeStatus(): Promise<void> {
    const initialized = this.initialized || this.terminal !== undefined;
    const podConditions = this.pod.status?.conditions ?? [];
    // Our last written condition keeps its lastTransitionTime stable, unless the stored one of that type
    // now has another status: then that is what the pod last showed, and a change from it is a transition.
    const written = this.writtenConditions.filter(
      (w) => (podConditions.find((c) => c.type === w.type)?.status ?? w.status) === w.status,
    );
    const ours = new Set(written.map((c) => c.type));
    const patch = podStatusPatch(
      {
        phase: this.terminal?.phase ?? podPhase(this.restartPolicy(), initialized, false, this.views("main")),
        reason: this.terminal?.reason,
        message: this.terminal?.message ?? (this.volumesReady ? undefined : this.setupProblem),
        hostIP: this.deps.addressing.bridgeIP,
        podIP: this.podIP,
        startTime: this.startTime,
        sandboxReady: this.network !== undefined && this.volumesReady,
        initialized,
        initContainers: this.views("init"),
        sidecars: this.views("sidecar"),
        containers: this.views("main"),
        readinessGates: (this.pod.spec?.readinessGates ?? []).map((g) => g.conditionType),
        currentConditions: [...written, ...podConditions.filter((c) => !ours.has(c.type))],
      },
      new Date(),
    );
    const text = JSON.stringify(patch);
    // What the stored pod no longer says of our last write: someone else overwrote it.
    const drift = this.lastWritten ? statusDrift(this.lastWritten, this.pod.status) : [];
    if (text === this.lastPatch && drift.length === 0) return;
    if (drift.length > 0) {
      this.log.info({ drift }, "the stored pod status is not what the node wrote; writing it again");
    }
    // Optimistic concurrency: the patch carries the resourceVersion we built it from, so the API server
    // refuses it (409) if the pod changed meanwhile; then we read the pod again and retry next pass.
    const resourceVersion = this.pod.metadata?.resourceVersion;
    try {
      const updated = await this.deps.clients.core.patchNamespacedPodStatus(
        {
          namespace: this.key.namespace,
          name: this.key.name,
          body: { metadata: { uid: this.key.uid, resourceVersion }, status: patch },
        },
        STRATEGIC_MERGE_PATCH,
      );
      if (this.pod.metadata?.resourceVersion === resourceVersion) this.pod = updated;
      this.lastPatch = text;
      this.lastWritten = patch;
      if (patch.phase === "Running") this.startup.mark("running");
      this.writtenConditions = patch.conditions as V1PodCondition[];
    } catch (err) {
      const code = apiStatusCode(err);
      if (code === 404) {
        this.removed = true;
        return;
      }
      if (code === 409) {
        await this.refetch();
        this.kick();
        return;
      }
      this.log.warn({ err }, "status update failed; will retry");
    }
  }

  /** Reads the pod again after a conflict (unless a newer version arrived through the watch meanwhile). */
  private async refetch(): Promise<void> {
    const before = this.pod.metadata?.resourceVersion;
    try {
      const fresh = await this.deps.clients.core.readNamespacedPod({
        namespace: this.key.namespace,
        name: this.key.name,
      });
      if (fresh.metadata?.uid !== this.key.uid) {
        this.removed = true;
        return;
      }
      if (this.pod.metadata?.resourceVersion === before) this.pod = fresh;
    } catch (err) {
      if (apiStatusCode(err) === 404) this.removed = true;
    }
  }

  private views(role: "init" | "sidecar" | "main"): ContainerView[] {
    return [...this.runners.values()]
      .filter((r) => r.role === role)
      .map((r) => {
        const prober = this.probers.get(r.name);
        const spec = this.containerSpec(r.name);
        const started = spec ? this.hasStarted(spec) : r.running;
        return {
          name: r.name,
          image: r.image,
          state: r.state,
          lastState: r.previousState,
          restartCount: r.restartCount,
          started,
          ready: started && (prober ? prober.ready : true),
          willRestart: this.willRestart(r),
        };
      });
  }

  private containerSpec(name: string): V1Container | undefined {
    return [...(this.pod.spec?.initContainers ?? []), ...(this.pod.spec?.containers ?? [])].find(
      (c) => c.name === name,
    );
  }

  private runner(name: string): ContainerRunner {
    const runner = this.runners.get(name);
    if (!runner) throw new HarnessError("internal", `no runner for container ${name}`);
    return runner;
  }

  private restartPolicy(): string {
    return this.pod.spec?.restartPolicy ?? "Always";
  }

  private graceSeconds(deleting = false): number {
    const fromDelete = deleting ? this.pod.metadata?.deletionGracePeriodSeconds : undefined;
    return fromDelete ?? this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
  }

  private reportOnce(key: string, reason: string, message: string, container: string): void {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.deps.events.emit(this.pod, "Warning", reason, message, container);
  }
}
