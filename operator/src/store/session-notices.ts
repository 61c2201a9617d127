/**
 * Notices of transcript appends: migration 0013's trigger sends the session's uid on channel
 * {@link SESSION_EVENTS_CHANNEL} when a transaction that appended to `session_events` commits, and
 * this listener hands each to the controller, which takes a pass of that AgentSession. Without them a
 * running session's pass read its transcript every two seconds to learn whether the agent had posted
 * anything: at 10 000 sessions the controller's largest work and a Postgres query each time.
 *
 * A notice is a cue, never a fact: any login of the database may NOTIFY on any channel, so the pass it
 * starts reads the transcript itself, and a forged notice costs one pass. What may be missed is handled
 * by saying so: {@link SessionNotices.live} is true only while a probe — a NOTIFY through the store's
 * own pool with a random payload — has come back on the listening connection since it last
 * (re)connected. Between a lost connection and the next probe that returns (a restart of Postgres, a
 * transaction-mode pooler that drops notices) notices may not arrive, so the controller polls as
 * before; when a probe returns again, `onMissed` asks for a pass of every session.
 *
 * The listening connection, its reconnects (with back-off, for ever) and its liveness queries are
 * pg-listen's; it is a plain session on the controller's own login, outside the pool.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import pgListen from "pg-listen";
import type { StoreLogger } from "./pool.ts";

// The package's default export, as both its CommonJS entry and its types have it.
const createSubscriber = pgListen.default;

/** The channel migration 0013's trigger notifies. */
export const SESSION_EVENTS_CHANNEL = "gatehouse_session_events";

/** How often a probe checks that notices arrive, in milliseconds. */
export const PROBE_INTERVAL_MS = 30_000;

/** How long a probe may take to come back before notices count as not arriving, in milliseconds. */
export const PROBE_TIMEOUT_MS = 5_000;

/** Probes' payloads start with this; a session uid never does. */
const PROBE_PREFIX = "probe:";

/** What the listener tells its user. */
export interface SessionNoticeHandlers {
  /** A transaction appended events to session `sessionUid`'s transcript (or someone said so). */
  onNotice(sessionUid: string): void;
  /** Notices arrive again after a time they may not have: every session may have changed. */
  onMissed(): void;
}

/** A running listener. */
export interface SessionNotices {
  /** Whether every append since the last {@link SessionNoticeHandlers.onMissed} has been noticed. */
  live(): boolean;
  /** Probes now; resolves with whether the probe came back (tests; the timer probes on its own). */
  probe(): Promise<boolean>;
  stop(): Promise<void>;
}

export interface SessionNoticeOptions {
  /** The controller's database URL (its own login). */
  url: string;
  /** The store's pool, through which probes are sent like any append's notice. */
  pool: Pick<pg.Pool, "query">;
  handlers: SessionNoticeHandlers;
  log: StoreLogger;
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
}

/** Back-off between reconnect attempts: 0.5 s doubling to 10 s. */
function retryInterval(attempt: number): number {
  return Math.min(10_000, 500 * 2 ** Math.min(attempt, 5));
}

/**
 * Starts listening. Resolves once the first probe settled, whether or not it came back (the
 * controller then polls until one does). Errors: none; a failed connect is retried in the background.
 */
export async function listenSessionNotices(options: SessionNoticeOptions): Promise<SessionNotices> {
  const { handlers, log } = options;
  const probeTimeoutMs = options.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
  // Undefined until the first probe settled: a listener that never hears one warns too.
  let live: boolean | undefined;
  let stopped = false;
  let latestProbe = 0;
  const waiting = new Map<string, () => void>();

  const setLive = (next: boolean, why: string) => {
    if (next === live) return;
    live = next;
    if (next) {
      log.info(
        { channel: SESSION_EVENTS_CHANNEL },
        "transcript notices arrive; running sessions are not polled",
      );
      handlers.onMissed();
    } else {
      log.warn(
        { channel: SESSION_EVENTS_CHANNEL, why },
        "transcript notices may not arrive; running sessions are polled every 2 s until they do",
      );
    }
  };

  /** A subscriber wired to this listener; it counts once it listens (`listening`). */
  const subscribe = () => {
    const subscriber = createSubscriber(
      { connectionString: options.url, application_name: "gatehouse-notices" },
      {
        // The payload is the uid as sent, not JSON.
        parse: (payload: string) => payload,
        retryInterval,
        retryLimit: Number.POSITIVE_INFINITY,
        retryTimeout: Number.POSITIVE_INFINITY,
        // A half-open connection raises no error: pg-listen's query on it does, and reconnects.
        paranoidChecking: options.probeIntervalMs ?? PROBE_INTERVAL_MS,
      },
    );
    const state = { subscriber, listening: false };
    subscriber.notifications.on(SESSION_EVENTS_CHANNEL, (payload: unknown) => {
      if (typeof payload !== "string" || payload.length === 0) return;
      if (payload.startsWith(PROBE_PREFIX)) waiting.get(payload)?.();
      else handlers.onNotice(payload);
    });
    subscriber.events.on("reconnect", (attempt: number) => {
      setLive(false, `the listening connection was lost; reconnecting (attempt ${attempt})`);
    });
    // After a reconnect pg-listen has listened again before it says so; the first connect is not yet.
    subscriber.events.on("connected", () => {
      if (state.listening) void probe();
    });
    subscriber.events.on("error", (error: Error) => setLive(false, error.message));
    return state;
  };
  let current = subscribe();

  /** NOTIFYs a fresh payload through the pool and waits for it on the listening connection. */
  async function probe(): Promise<boolean> {
    if (stopped) return false;
    const mine = ++latestProbe;
    const payload = `${PROBE_PREFIX}${randomUUID()}`;
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<boolean>((resolve) => {
      waiting.set(payload, () => resolve(true));
      timer = setTimeout(() => resolve(false), probeTimeoutMs);
    });
    let came = false;
    let why = `a probe did not come back within ${probeTimeoutMs} ms`;
    try {
      await options.pool.query("SELECT pg_notify($1, $2)", [SESSION_EVENTS_CHANNEL, payload]);
      came = await arrived;
    } catch (error) {
      why = `could not send a probe: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      clearTimeout(timer);
      waiting.delete(payload);
    }
    // Only the newest probe speaks: an older one timing out says nothing about the connection now.
    if (mine === latestProbe && !stopped) setLive(came, why);
    return came;
  }

  const connect = async (): Promise<void> => {
    try {
      await current.subscriber.connect();
      await current.subscriber.listenTo(SESSION_EVENTS_CHANNEL);
      current.listening = true;
      await probe();
    } catch (error) {
      setLive(false, `could not listen: ${error instanceof Error ? error.message : String(error)}`);
      // pg-listen reconnects a connection it once had; a first connect that failed is ours to retry,
      // on a new client (a pg client connects once), in the background: meanwhile sessions are polled.
      void current.subscriber.close().catch(() => {});
      setTimeout(() => {
        if (stopped) return;
        current = subscribe();
        void connect();
      }, retryInterval(5)).unref();
    }
  };
  await connect();
  const timer = setInterval(() => void probe(), options.probeIntervalMs ?? PROBE_INTERVAL_MS);
  timer.unref();
  return {
    live: () => live === true,
    probe,
    async stop() {
      stopped = true;
      clearInterval(timer);
      live = false;
      await current.subscriber.close().catch(() => {});
    },
  };
}
