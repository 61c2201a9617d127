import { connect } from "node:net";
import type { V1ContainerPort, V1Probe } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { httpGet } from "../http-get.ts";

/** Probe defaults of core/v1 Probe, in seconds / counts. */
const DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };

/** Runs an exec probe's command in the container's namespace and environment; true when it exits 0. */
export type ExecProbe = (command: readonly string[], timeoutMs: number) => Promise<boolean>;

/** What a {@link ReadinessProber} probes and whom it tells. */
export type ProberOptions = {
  probe: V1Probe;
  podIP: string;
  /** The container's ports, for named probe ports. */
  ports: readonly V1ContainerPort[];
  exec: ExecProbe;
  /** Called whenever `ready` flips. */
  onChange: () => void;
  log: Logger;
};

/**
 * Runs one container's readiness probe: `exec` (the command, run in the pod's network namespace with the
 * container's environment, passes on exit 0), `httpGet` against the pod IP (HTTP/HTTPS, status 200–399
 * passes; HTTPS certificates are not verified, as with the kubelet) or `tcpSocket` (a connection opens).
 * A `grpc` probe is not supported: it is logged and never passes, so the container never turns Ready
 * (better visible than a false Ready). Honours initialDelaySeconds, periodSeconds, timeoutSeconds,
 * successThreshold and failureThreshold. Semantics: k8s.io/kubernetes pkg/kubelet/prober/worker.go.
 */
export class ReadinessProber {
  ready = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private readonly options: ProberOptions;

  constructor(options: ProberOptions) {
    this.options = options;
  }

  /** Starts probing after initialDelaySeconds. */
  start(): void {
    const probe = this.options.probe;
    if (!probe.exec && !probe.httpGet && !probe.tcpSocket) {
      this.options.log.warn("the local node runs exec, httpGet and tcpSocket probes only; never ready");
      return;
    }
    this.schedule((probe.initialDelaySeconds ?? 0) * 1000);
  }

  /** Stops probing; `ready` becomes false. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ready = false;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
  }

  private async tick(): Promise<void> {
    const passed = await this.check().catch(() => false);
    if (this.stopped) return;
    const probe = this.options.probe;
    if (passed) {
      this.failures = 0;
      this.successes++;
      if (this.successes >= (probe.successThreshold ?? DEFAULTS.successThreshold)) this.set(true);
    } else {
      this.successes = 0;
      this.failures++;
      if (this.failures >= (probe.failureThreshold ?? DEFAULTS.failureThreshold) || !this.ready) {
        this.set(false);
      }
    }
    this.schedule((probe.periodSeconds ?? DEFAULTS.periodSeconds) * 1000);
  }

  private set(ready: boolean): void {
    if (this.ready === ready) return;
    this.ready = ready;
    this.options.onChange();
  }

  private async check(): Promise<boolean> {
    const { probe, podIP } = this.options;
    const timeoutMs = (probe.timeoutSeconds ?? DEFAULTS.timeoutSeconds) * 1000;
    if (probe.exec) return this.options.exec(probe.exec.command ?? [], timeoutMs);
    if (probe.httpGet) {
      const get = probe.httpGet;
      const scheme = (get.scheme ?? "HTTP").toLowerCase();
      const path = get.path?.startsWith("/") ? get.path : `/${get.path ?? ""}`;
      const url = `${scheme}://${get.host ?? podIP}:${this.port(get.port)}${path}`;
      const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const res = await httpGet(url, { timeoutMs, insecure: true, headers });
      return res.status >= 200 && res.status < 400;
    }
    if (probe.tcpSocket) {
      const port = this.port(probe.tcpSocket.port);
      const host = probe.tcpSocket.host ?? podIP;
      return new Promise((resolve) => {
        const socket = connect({ host, port, timeout: timeoutMs });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("timeout", () => {
          socket.destroy();
          resolve(false);
        });
        socket.once("error", () => resolve(false));
      });
    }
    return false;
  }

  /** A numeric port, or a named container port looked up in the container's `ports`. */
  private port(port: number | string | object): number {
    if (typeof port === "number") return port;
    if (typeof port === "string" && /^\d+$/.test(port)) return Number(port);
    const named = this.options.ports.find((p) => p.name === port);
    if (!named) throw new Error(`probe port ${String(port)} is not a container port name`);
    return named.containerPort;
  }
}
