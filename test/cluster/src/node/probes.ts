import { connect } from "node:net";
import type { V1ContainerPort, V1Probe } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { httpGet } from "../http-get.ts";

/** Probe defaults of core/v1 Probe, in seconds / counts. */
const DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };

/**
 * Runs one container's readiness probe against the pod IP: httpGet (HTTP/HTTPS, status 200–399 passes;
 * HTTPS certificates are not verified, as with the kubelet) or tcpSocket. `exec` and `grpc` probes are
 * not supported: they are logged once and count as passing, so such pods still become Ready.
 * Honours initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold and failureThreshold;
 * calls `onChange` whenever `ready` flips.
 */
export class ReadinessProber {
  ready = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private readonly probe: V1Probe;
  private readonly podIP: string;
  private readonly ports: readonly V1ContainerPort[];
  private readonly onChange: () => void;
  private readonly log: Logger;

  constructor(
    probe: V1Probe,
    podIP: string,
    ports: readonly V1ContainerPort[],
    onChange: () => void,
    log: Logger,
  ) {
    this.probe = probe;
    this.podIP = podIP;
    this.ports = ports;
    this.onChange = onChange;
    this.log = log;
  }

  /** Starts probing after initialDelaySeconds. */
  start(): void {
    if (!this.probe.httpGet && !this.probe.tcpSocket) {
      this.log.warn("exec and grpc readiness probes are not supported by the local node; treating as ready");
      this.set(true);
      return;
    }
    this.schedule((this.probe.initialDelaySeconds ?? 0) * 1000);
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
    if (passed) {
      this.failures = 0;
      this.successes++;
      if (this.successes >= (this.probe.successThreshold ?? DEFAULTS.successThreshold)) this.set(true);
    } else {
      this.successes = 0;
      this.failures++;
      if (this.failures >= (this.probe.failureThreshold ?? DEFAULTS.failureThreshold) || !this.ready) {
        this.set(false);
      }
    }
    this.schedule((this.probe.periodSeconds ?? DEFAULTS.periodSeconds) * 1000);
  }

  private set(ready: boolean): void {
    if (this.ready === ready) return;
    this.ready = ready;
    this.onChange();
  }

  private async check(): Promise<boolean> {
    const timeoutMs = (this.probe.timeoutSeconds ?? DEFAULTS.timeoutSeconds) * 1000;
    if (this.probe.httpGet) {
      const get = this.probe.httpGet;
      const scheme = (get.scheme ?? "HTTP").toLowerCase();
      const path = get.path?.startsWith("/") ? get.path : `/${get.path ?? ""}`;
      const url = `${scheme}://${get.host ?? this.podIP}:${this.port(get.port)}${path}`;
      const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const res = await httpGet(url, { timeoutMs, insecure: true, headers });
      return res.status >= 200 && res.status < 400;
    }
    if (this.probe.tcpSocket) {
      const port = this.port(this.probe.tcpSocket.port);
      const host = this.probe.tcpSocket.host ?? this.podIP;
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
    return true;
  }

  /** A numeric port, or a named container port looked up in the container's `ports`. */
  private port(port: number | string | object): number {
    if (typeof port === "number") return port;
    if (typeof port === "string" && /^\d+$/.test(port)) return Number(port);
    const named = this.ports.find((p) => p.name === port);
    if (!named) throw new Error(`probe port ${String(port)} is not a container port name`);
    return named.containerPort;
  }
}
