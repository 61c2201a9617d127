/**
 * Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection
 * (k8s.io/client-go/tools/leaderelection/leaderelection.go): candidates try every `retryPeriodMs`
 * (jittered × [1, 1.2)) to create the Lease or take it over once it has lapsed; the holder renews it
 * every `retryPeriodMs` and steps down when no renewal has succeeded for `renewDeadlineMs`. Whether a
 * Lease lapsed is judged by the local clock from when this candidate last saw the record change
 * (client-go's observedTime), so clock skew between replicas does not matter. Every write is a PUT with
 * the Lease's resourceVersion, so two candidates can never both win. `acquireTime` and `renewTime` are
 * MicroTime: six fractional digits, sent through client-node's V1MicroTime.
 * Defaults: lease 15 s, renew deadline 10 s, retry 2 s (client-go's and controller-runtime's).
 */
import { type CoordinationV1Api, type V1Lease, V1MicroTime } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { isConflict, isNotFound } from "./client.ts";

/** How long stop() tries to release the Lease, in milliseconds. */
const RELEASE_TIMEOUT_MS = 2_000;

/** Options of a {@link LeaderElector}. */
export interface LeaderElectionOptions {
  api: CoordinationV1Api;
  namespace: string;
  name: string;
  /** This candidate's identity, unique per process (e.g. `<pod name>_<random>`). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** Local monotonic-enough clock in milliseconds (tests may move it). */
  now?: () => number;
}

/** Campaigns for a Lease and holds it while it can. */
export class LeaderElector {
  private readonly o: Required<Omit<LeaderElectionOptions, "log">> & { log: Logger };
  private observed: { record: string; at: number } | undefined;
  private stopped = false;
  private leading = false;
  private wake: (() => void) | undefined;

  constructor(options: LeaderElectionOptions) {
    this.o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      now: Date.now,
      ...options,
    };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs) {
      throw new Error("leader election: renewDeadlineMs must be shorter than leaseDurationMs");
    }
  }

  /** True while this candidate holds the Lease. */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until the Lease is acquired, calls `onStartedLeading`, then renews until a renewal has
   * failed for `renewDeadlineMs` (or {@link stop} is called) and calls `onStoppedLeading`. Resolves after
   * that; a stop before acquiring resolves without calling either callback.
   */
  async run(onStartedLeading: () => void, onStoppedLeading: () => void): Promise<void> {
    const { log } = this.o;
    while (!this.stopped) {
      if (await this.tryAcquireOrRenew()) break;
      await this.sleep(this.o.retryPeriodMs * (1 + 0.2 * Math.random()));
    }
    if (this.stopped) return;
    this.leading = true;
    log.info({ lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity }, "became leader");
    onStartedLeading();
    let lastRenewal = this.o.now();
    while (!this.stopped) {
      await this.sleep(this.o.retryPeriodMs);
      if (this.stopped) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenewal = this.o.now();
      } else if (this.o.now() - lastRenewal >= this.o.renewDeadlineMs) {
        log.error({ identity: this.o.identity }, "could not renew the leader lease in time; stepping down");
        break;
      }
    }
    this.leading = false;
    onStoppedLeading();
  }

  /**
   * Stops campaigning or renewing; a held Lease is released (holder cleared) so a successor need not
   * wait. The release gets RELEASE_TIMEOUT_MS: with the API server gone, shutting down must not hang.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    if (!this.leading) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.o.log.warn({ identity: this.o.identity }, "leader lease not released in time; it will lapse");
        resolve();
      }, RELEASE_TIMEOUT_MS);
    });
    await Promise.race([this.release(), timeout]);
    clearTimeout(timer);
  }

  private async release(): Promise<void> {
    try {
      const lease = await this.o.api.readNamespacedLease({ namespace: this.o.namespace, name: this.o.name });
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      await this.o.api.replaceNamespacedLease({
        namespace: this.o.namespace,
        name: this.o.name,
        body: {
          ...lease,
          spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: new V1MicroTime() },
        },
      });
      this.o.log.info({ identity: this.o.identity }, "released the leader lease");
    } catch (error) {
      this.o.log.warn({ err: String(error) }, "could not release the leader lease");
    }
  }

  /** One round of client-go's tryAcquireOrRenew; true when this candidate holds the Lease after it. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { api, namespace, name, identity } = this.o;
    const now = this.o.now();
    const micro = new V1MicroTime(now);
    const durationSeconds = Math.ceil(this.o.leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await api.readNamespacedLease({ namespace, name });
    } catch (error) {
      if (!isNotFound(error)) return this.failed(error);
      try {
        await api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: micro,
              renewTime: micro,
              leaseTransitions: 0,
            },
          },
        });
        this.observed = { record: `${identity}|${micro.toISOString()}`, at: now };
        return true;
      } catch (createError) {
        return this.failed(createError);
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const record = `${holder}|${spec.renewTime ? new Date(spec.renewTime).toISOString() : ""}`;
    if (this.observed?.record !== record) this.observed = { record, at: now };
    const lapsed = this.observed.at + (spec.leaseDurationSeconds ?? durationSeconds) * 1000 <= now;
    if (holder !== "" && holder !== identity && !lapsed) return false;
    const takingOver = holder !== identity;
    try {
      await api.replaceNamespacedLease({
        namespace,
        name,
        body: {
          ...lease,
          spec: {
            ...spec,
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: takingOver ? micro : spec.acquireTime ? new V1MicroTime(spec.acquireTime) : micro,
            renewTime: micro,
            leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && holder !== "" ? 1 : 0),
          },
        },
      });
      this.observed = { record: `${identity}|${micro.toISOString()}`, at: now };
      return true;
    } catch (error) {
      return this.failed(error);
    }
  }

  private failed(error: unknown): false {
    if (!isConflict(error)) this.o.log.warn({ err: String(error) }, "leader lease request failed");
    return false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
