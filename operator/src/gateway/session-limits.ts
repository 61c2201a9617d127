/**
 * Per-session admission of agent requests: one agent pod must not starve the gateway every other
 * session shares. Each session has a token bucket (a sustained rate with a burst) and a cap on its
 * requests in flight; a request over either is refused at once with the time to wait, which the
 * gateway answers 429 `Retry-After` and the agent's clients honour. Refusing, not queueing: a queue
 * would hold the flood's sockets and memory in the gateway, which is what the limit is for.
 * State is per gateway replica and bounded (least recently used sessions are forgotten; a forgotten
 * session starts again with a full bucket, never with more than one).
 */
import { TokenBucket } from "limiter";
import { LRUCache } from "lru-cache";
import { GatehouseError } from "../core/errors.ts";

/** The limits of one session's requests to one gateway replica. */
export interface SessionRequestLimits {
  /** Sustained requests per second (the bucket's refill). */
  requestsPerSecond: number;
  /** Requests a session may send at once above the sustained rate (the bucket's size). */
  burst: number;
  /** Requests of one session being answered at the same time (long-polls and model streams count). */
  maxInFlight: number;
}

/** Sessions whose state one replica keeps; beyond it the least recently seen is dropped. */
const TRACKED_SESSIONS = 20_000;

/** A refused request: how long to wait before the next one can be admitted, in whole seconds. */
export class SessionRateLimited extends GatehouseError {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super("unavailable", message);
    this.name = "SessionRateLimited";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** True when `error` is a request refused by a session's limits. */
export function isSessionRateLimited(error: unknown): error is SessionRateLimited {
  return error instanceof SessionRateLimited;
}

interface SessionState {
  bucket: TokenBucket;
  inFlight: number;
}

/** Admits requests per session; `admit` returns the release to call once the answer is done. */
export interface SessionLimiter {
  /** Throws {@link SessionRateLimited} when `sessionUid` is over its rate or in-flight cap. */
  admit(sessionUid: string): () => void;
  /** Requests in flight for `sessionUid` (for tests and metrics). */
  inFlight(sessionUid: string): number;
}

/** A limiter enforcing `limits` for every session. */
export function sessionLimiter(limits: SessionRequestLimits): SessionLimiter {
  const sessions = new LRUCache<string, SessionState>({ max: TRACKED_SESSIONS });
  const stateOf = (uid: string): SessionState => {
    let state = sessions.get(uid);
    if (!state) {
      const bucket = new TokenBucket({
        bucketSize: limits.burst,
        tokensPerInterval: limits.requestsPerSecond,
        interval: "second",
      });
      // limiter starts a bucket empty; a session's first requests are its burst.
      bucket.content = limits.burst;
      state = { bucket, inFlight: 0 };
      sessions.set(uid, state);
    }
    return state;
  };
  return {
    admit(uid) {
      const state = stateOf(uid);
      if (state.inFlight >= limits.maxInFlight) {
        throw new SessionRateLimited(
          `This session already has ${state.inFlight} requests in flight (the limit is ${limits.maxInFlight}); retry when one has been answered.`,
          1,
        );
      }
      if (!state.bucket.tryRemoveTokens(1)) {
        const waitMs = state.bucket.getWaitTime(1);
        throw new SessionRateLimited(
          `This session sends more than ${limits.requestsPerSecond} requests per second (burst ${limits.burst}); retry after the time in Retry-After.`,
          Math.max(1, Math.ceil(waitMs / 1000)),
        );
      }
      state.inFlight += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        state.inFlight -= 1;
      };
    },
    inFlight: (uid) => sessions.peek(uid)?.inFlight ?? 0,
  };
}
