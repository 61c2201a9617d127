/**
 * The fake APS's mutable state and its business rules: who may do what, drafts as isolated copies,
 * publishing exactly once per idempotency key, and refusing stale versions. Every operation returns an
 * `ApsAnswer` (HTTP status + JSON body) so the server only translates routes.
 */
import { copyVersion, type Plan, seedPlans, shiftedDraft } from "./plans.ts";

/** A right a user holds in the APS. */
export type ApsRight = "plan.read" | "plan.draft" | "plan.publish";

/** Default users of the reference story: alice may publish, bob may only read and draft (DESIGN §1). */
export const defaultApsUsers: Record<string, ApsRight[]> = {
  alice: ["plan.read", "plan.draft", "plan.publish"],
  bob: ["plan.read", "plan.draft"],
  carol: ["plan.read"],
};

/** What the APS answers: an HTTP status and a JSON body (`{error, message}` when status ≥ 400). */
export interface ApsAnswer {
  statusCode: number;
  body: unknown;
}

/** One real publish — the effect tests assert happens exactly once. */
export interface PublishEvent {
  publicationId: string;
  planId: string;
  version: number;
  user: string;
  idempotencyKey: string;
  publishedAt: string;
}

interface StoredAnswer {
  fingerprint: string;
  answer: ApsAnswer;
}

function refusal(statusCode: number, error: string, message: string): ApsAnswer {
  return { statusCode, body: { error, message } };
}

/**
 * The whole business system in memory. Idempotency follows the usual API convention (e.g. Stripe's):
 * a key replays the first answer — success or business refusal — for the same request, and a key reused
 * for a different request is refused with 422 `idempotency_key_reused`.
 */
export class ApsState {
  readonly plans = new Map<string, Plan>();
  readonly publishes: PublishEvent[] = [];
  readonly users: Record<string, ApsRight[]>;
  private readonly answersByKey = new Map<string, StoredAnswer>();
  private readonly now: () => Date;

  constructor(options: { users?: Record<string, ApsRight[]>; now?: () => Date } = {}) {
    this.users = options.users ?? defaultApsUsers;
    this.now = options.now ?? (() => new Date());
    for (const plan of seedPlans()) this.plans.set(plan.id, plan);
  }

  /** The published version of a plan, or a given version. Needs `plan.read`. */
  read(user: string | undefined, planId: string, version?: number): ApsAnswer {
    const denied = this.check(user, "plan.read");
    if (denied) return denied;
    const plan = this.plans.get(planId);
    if (!plan) return refusal(404, "not_found", `plan ${planId} does not exist`);
    const found = plan.versions.get(version ?? plan.publishedVersion);
    if (!found) return refusal(404, "not_found", `plan ${planId} has no version ${version}`);
    return { statusCode: 200, body: copyVersion(found) };
  }

  /**
   * Creates a draft (next version number, not published) copied from the published version, or from
   * `baseVersion`, with every line shifted by `shiftDays`. Needs `plan.draft`; honours an idempotency key.
   */
  createDraft(
    user: string | undefined,
    planId: string,
    request: { shiftDays: number; baseVersion?: number },
    idempotencyKey: string | undefined,
  ): ApsAnswer {
    return this.once(idempotencyKey, ["draft", user, planId, request.shiftDays, request.baseVersion], () => {
      const denied = this.check(user, "plan.draft");
      if (denied) return denied;
      const plan = this.plans.get(planId);
      if (!plan) return refusal(404, "not_found", `plan ${planId} does not exist`);
      const base = plan.versions.get(request.baseVersion ?? plan.publishedVersion);
      if (!base) return refusal(404, "not_found", `plan ${planId} has no version ${request.baseVersion}`);
      const draft = shiftedDraft(base, request.shiftDays, Math.max(...plan.versions.keys()) + 1, user!);
      plan.versions.set(draft.version, draft);
      return { statusCode: 201, body: copyVersion(draft) };
    });
  }

  /**
   * Publishes a draft version. Needs `plan.publish` and an idempotency key. A draft not based on the
   * currently published version, or a version that is not a draft, is stale → 409.
   */
  publish(
    user: string | undefined,
    planId: string,
    version: number,
    idempotencyKey: string | undefined,
  ): ApsAnswer {
    if (!idempotencyKey)
      return refusal(400, "invalid_request", "header Idempotency-Key is required to publish");
    return this.once(idempotencyKey, ["publish", user, planId, version], () => {
      const denied = this.check(user, "plan.publish");
      if (denied) return denied;
      const plan = this.plans.get(planId);
      if (!plan) return refusal(404, "not_found", `plan ${planId} does not exist`);
      const draft = plan.versions.get(version);
      if (!draft) return refusal(404, "not_found", `plan ${planId} has no version ${version}`);
      if (draft.status !== "draft" || draft.basedOnVersion !== plan.publishedVersion) {
        return refusal(
          409,
          "stale_version",
          `version ${version} of ${planId} is ${draft.status} and based on version ${draft.basedOnVersion}; ` +
            `the published version is ${plan.publishedVersion}`,
        );
      }
      const previous = plan.versions.get(plan.publishedVersion);
      if (previous) previous.status = "superseded";
      draft.status = "published";
      plan.publishedVersion = version;
      const event: PublishEvent = {
        publicationId: `pub-${this.publishes.length + 1}`,
        planId,
        version,
        user: user!,
        idempotencyKey,
        publishedAt: this.now().toISOString(),
      };
      this.publishes.push(event);
      return {
        statusCode: 200,
        body: {
          planId,
          version,
          status: "published",
          publicationId: event.publicationId,
          publishedBy: event.user,
          publishedAt: event.publishedAt,
        },
      };
    });
  }

  /** 401 for an unknown or missing user, 403 when the user lacks the right, else undefined. */
  private check(user: string | undefined, right: ApsRight): ApsAnswer | undefined {
    if (!user || !(user in this.users))
      return refusal(401, "unauthenticated", "header X-APS-User names no known user");
    if (!this.users[user]!.includes(right)) {
      return refusal(403, "forbidden", `user ${user} lacks the right ${right}`);
    }
    return undefined;
  }

  /** Runs `operation` once per idempotency key and replays its answer; without a key it simply runs. */
  private once(key: string | undefined, request: unknown[], operation: () => ApsAnswer): ApsAnswer {
    if (!key) return operation();
    const fingerprint = JSON.stringify(request);
    const stored = this.answersByKey.get(key);
    if (stored) {
      if (stored.fingerprint !== fingerprint) {
        return refusal(
          422,
          "idempotency_key_reused",
          `idempotency key ${key} was used for a different request`,
        );
      }
      return stored.answer;
    }
    const answer = operation();
    this.answersByKey.set(key, { fingerprint, answer });
    return answer;
  }
}
