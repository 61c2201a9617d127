import { describe, expect, it } from "vitest";
import { AGENT_SERVICE_ACCOUNT, GATEHOUSE_AUDIENCE } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import {
  ACCEPTED_TOKEN_CACHE_MS,
  REFUSED_TOKEN_CACHE_MS,
  type TokenReviewerOptions,
  tokenReviewer,
} from "./authenticate.ts";

/** The TokenReview status the API server gives a pod-bound token of `account` in `ns`. */
function podTokenStatus(account = AGENT_SERVICE_ACCOUNT, ns = "team-a") {
  return {
    authenticated: true,
    audiences: [GATEHOUSE_AUDIENCE],
    user: {
      username: `system:serviceaccount:${ns}:${account}`,
      extra: {
        "authentication.kubernetes.io/pod-uid": ["uid-1"],
        "authentication.kubernetes.io/pod-name": ["agent-1"],
      },
    },
  };
}

/**
 * A reviewer over a counting stand-in for the API server's TokenReview: tokens starting `good` are
 * the agent's pod-bound tokens, `other-sa` another ServiceAccount's, `down` fails to be answered,
 * anything else is not authenticated. A manual clock.
 */
function setup(options: Omit<TokenReviewerOptions, "now"> = {}) {
  const clock = { ms: 1_000_000 };
  const reviews: string[] = [];
  const clients = {
    authentication: {
      async createTokenReview({ body }: { body: { spec: { token: string } } }) {
        const token = body.spec.token;
        reviews.push(token);
        if (token.startsWith("down")) throw new Error("connect ECONNREFUSED");
        if (token.startsWith("good")) return { status: podTokenStatus() };
        if (token.startsWith("other-sa")) return { status: podTokenStatus("default") };
        return { status: { authenticated: false, error: "invalid bearer token" } };
      },
    },
  } as unknown as Parameters<typeof tokenReviewer>[0];
  const review = tokenReviewer(clients, { ...options, now: () => clock.ms });
  return { clock, reviews, review };
}

async function refusal(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  return error as GatehouseError;
}

describe("tokenReviewer's verdict caches", () => {
  it("reuses an accepted token's identity for 10 s, then reviews it again", async () => {
    const { clock, reviews, review } = setup();
    const identity = { namespace: "team-a", podName: "agent-1", podUID: "uid-1" };
    expect(await review("good-1")).toEqual(identity);
    clock.ms += ACCEPTED_TOKEN_CACHE_MS;
    expect(await review("good-1")).toEqual(identity);
    expect(reviews).toEqual(["good-1"]);
    clock.ms += 1;
    expect(await review("good-1")).toEqual(identity);
    expect(reviews).toEqual(["good-1", "good-1"]);
  });

  it("refuses a repeated garbage token for 5 s without another TokenReview, then reviews it again", async () => {
    const { clock, reviews, review } = setup();
    const first = await refusal(review("garbage"));
    expect(first.kind).toBe("forbidden");
    expect(first.message).toMatch(/Token not accepted.*invalid bearer token/);
    for (let i = 0; i < 50; i++) {
      const again = await refusal(review("garbage"));
      expect(again.kind).toBe("forbidden");
      expect(again.message).toBe(first.message);
    }
    clock.ms += REFUSED_TOKEN_CACHE_MS;
    await refusal(review("garbage"));
    expect(reviews).toEqual(["garbage"]);
    clock.ms += 1;
    await refusal(review("garbage"));
    expect(reviews).toEqual(["garbage", "garbage"]);
  });

  it("caches the refusal of another ServiceAccount's token too", async () => {
    const { reviews, review } = setup();
    for (let i = 0; i < 3; i++) {
      expect((await refusal(review("other-sa-token"))).message).toMatch(/Only the gatehouse-agent/);
    }
    expect(reviews).toEqual(["other-sa-token"]);
  });

  it("never caches the API server's failure to answer", async () => {
    const { reviews, review } = setup();
    for (let i = 0; i < 3; i++) {
      const error = await review("down-token").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as Error).message).toMatch(/ECONNREFUSED/);
    }
    expect(reviews).toEqual(["down-token", "down-token", "down-token"]);
  });

  it("holds at most maxEntries refusals: a flood of distinct garbage evicts the oldest, not the pods' acceptances", async () => {
    const { reviews, review } = setup({ maxEntries: 100 });
    await review("good-pod");
    await refusal(review("garbage-first"));
    for (let i = 0; i < 1_000; i++) await refusal(review(`garbage-${i}`));
    expect(reviews).toHaveLength(1_002);
    // The flood pushed the first refusal out of its bounded cache: it costs a review again…
    await refusal(review("garbage-first"));
    expect(reviews).toHaveLength(1_003);
    // …the latest ones are still held…
    await refusal(review("garbage-999"));
    expect(reviews).toHaveLength(1_003);
    // …and the pod's acceptance, in its own cache, is untouched.
    await review("good-pod");
    expect(reviews).toHaveLength(1_003);
  });
});
