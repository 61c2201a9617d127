/**
 * The fake APS's mutable state and its business rules: who may do what, drafts as isolated copies,
 * publishing exactly once per idempotency key, refusing stale versions, and the record of every keyed
 * operation that a status query reads. Every operation returns an `ApsAnswer` (HTTP status + JSON body)
 * so the server only translates routes. With a state file every change is written to it before the
 * answer is returned, so a restarted APS keeps plans, publishes and keyed answers (`aps-store.ts`).
 */

import { type ApsSnapshot, loadSnapshot, saveSnapshot } from "./aps-store.ts";
import { copyVersion, type Plan, type PlanVersion, seedPlans, shiftedDraft } from "./plans.ts";

/** A right a user holds in the APS. `operation.read` reads the record of a keyed operation. */
export type ApsRight = "plan.read" | "plan.draft" | "plan.publish" | "operation.read";

/**
 * Default users of the reference story (DESIGN §1): alice may publish, bob may only read and draft,
 * carol only reads. `gatehouse` is the integration user the provider itself holds (DESIGN §7: a provider
 * holds its own business-system credentials): it reads plans and the records of keyed operations, for
 * calls that act for nobody (status queries, target versions).
 */
export const defaultApsUsers: Record<string, ApsRight[]> = {
  alice: ["plan.read", "plan.draft", "plan.publish"],
  bob: ["plan.read", "plan.draft"],
  carol: ["plan.read"],
  gatehouse: ["plan.read", "operation.read"],
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

/** Operations that take an idempotency key and leave a record a status query can read. */
export type KeyedOperation = "draft" | "publish";

/**
 * The APS's record of a keyed operation, as `GET /api/operations/{key}` returns it: what was asked, by
 * whom, when, and the answer it got (`statusCode`, `body`) — the answer a repeated request replays.
 */
export interface OperationRecord {
  idempotencyKey: string;
  operation: KeyedOperation;
  planId: string;
  user: string | null;
  recordedAt: string;
  statusCode: number;
  body: unknown;
}

/** The versions of a plan without their lines: which is published and which is the newest. */
export interface PlanVersions {
  planId: string;
  publishedVersion: number;
  /** The newest version number, draft or not: a draft made since moves it. */
  latestVersion: number;
  versions: Array<Pick<PlanVersion, "version" | "status" | "basedOnVersion" | "createdBy">>;
}

interface StoredOperation extends OperationRecord {
  /** The request the key was first used for; a different request under the key is refused. */
  fingerprint: string;
}

function refusal(statusCode: number, error: string, message: string): ApsAnswer {
  return { statusCode, body: { error, message } };
}

/** Options of `ApsState`. */
export interface ApsStateOptions {
  users?: Record<string, ApsRight[]>;
  now?: () => Date;
  /** JSON file the state is loaded from (when it exists) and written to after every change. */
  stateFile?: string;
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
  private readonly operations = new Map<string, StoredOperation>();
  private readonly now: () => Date;
  private readonly stateFile: string | undefined;

  constructor(options: ApsStateOptions = {}) {
    this.users = options.users ?? defaultApsUsers;
    this.now = options.now ?? (() => new Date());
    this.stateFile = options.stateFile;
    const saved = this.stateFile ? loadSnapshot(this.stateFile) : undefined;
    if (saved) {
      this.restore(saved);
    } else {
      for (const plan of seedPlans()) this.plans.set(plan.id, plan);
    }
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

  /** Every version of a plan, newest last, with the published and the newest version number. Needs `plan.read`. */
  versions(user: string | undefined, planId: string): ApsAnswer {
    const denied = this.check(user, "plan.read");
    if (denied) return denied;
    const plan = this.plans.get(planId);
    if (!plan) return refusal(404, "not_found", `plan ${planId} does not exist`);
    const versions = [...plan.versions.values()].sort((a, b) => a.version - b.version);
    const body: PlanVersions = {
      planId,
      publishedVersion: plan.publishedVersion,
      latestVersion: versions.at(-1)!.version,
      versions: versions.map(({ version, status, basedOnVersion, createdBy }) => ({
        version,
        status,
        basedOnVersion,
        createdBy,
      })),
    };
    return { statusCode: 200, body };
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
    const fingerprint = ["draft", user, planId, request.shiftDays, request.baseVersion];
    return this.once(idempotencyKey, "draft", user, planId, fingerprint, () => {
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
   * currently published version, or a version that is not a draft, is stale → 409 `conflict`.
   */
  publish(
    user: string | undefined,
    planId: string,
    version: number,
    idempotencyKey: string | undefined,
  ): ApsAnswer {
    if (!idempotencyKey)
      return refusal(400, "invalid_request", "header Idempotency-Key is required to publish");
    const fingerprint = ["publish", user, planId, version];
    return this.once(idempotencyKey, "publish", user, planId, fingerprint, () => {
      const denied = this.check(user, "plan.publish");
      if (denied) return denied;
      const plan = this.plans.get(planId);
      if (!plan) return refusal(404, "not_found", `plan ${planId} does not exist`);
      const draft = plan.versions.get(version);
      if (!draft) return refusal(404, "not_found", `plan ${planId} has no version ${version}`);
      if (draft.status !== "draft" || draft.basedOnVersion !== plan.publishedVersion) {
        return refusal(
          409,
          "conflict",
          `version ${version} of ${planId} is stale: it is ${draft.status} and based on version ` +
            `${draft.basedOnVersion}, but the published version is ${plan.publishedVersion}`,
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

  /**
   * The status query: the record of the operation made with `idempotencyKey` (its answer included), or
   * 404 `not_found` when the key was never used. Needs `operation.read`.
   */
  operation(user: string | undefined, idempotencyKey: string): ApsAnswer {
    const denied = this.check(user, "operation.read");
    if (denied) return denied;
    const stored = this.operations.get(idempotencyKey);
    if (!stored)
      return refusal(404, "not_found", `no operation was made with idempotency key ${idempotencyKey}`);
    const { fingerprint: _fingerprint, ...record } = stored;
    return { statusCode: 200, body: record };
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

  /**
   * Runs `operation` once per idempotency key, records and persists its answer, and replays it for the
   * same request; without a key it simply runs (and persists what it changed).
   */
  private once(
    key: string | undefined,
    operation: KeyedOperation,
    user: string | undefined,
    planId: string,
    request: unknown[],
    run: () => ApsAnswer,
  ): ApsAnswer {
    const fingerprint = JSON.stringify(request);
    const stored = key ? this.operations.get(key) : undefined;
    if (stored) {
      if (stored.fingerprint !== fingerprint) {
        return refusal(
          422,
          "idempotency_key_reused",
          `idempotency key ${key} was used for a different request`,
        );
      }
      return { statusCode: stored.statusCode, body: stored.body };
    }
    const answer = run();
    if (key) {
      this.operations.set(key, {
        idempotencyKey: key,
        operation,
        planId,
        user: user ?? null,
        recordedAt: this.now().toISOString(),
        statusCode: answer.statusCode,
        body: answer.body,
        fingerprint,
      });
    }
    this.save();
    return answer;
  }

  /** Writes the state file (when there is one); called after every change, before answering. */
  private save(): void {
    if (!this.stateFile) return;
    saveSnapshot(this.stateFile, {
      plans: [...this.plans.values()].map((plan) => ({
        id: plan.id,
        week: plan.week,
        publishedVersion: plan.publishedVersion,
        versions: [...plan.versions.values()].map(copyVersion),
      })),
      publishes: this.publishes,
      operations: [...this.operations.values()],
    });
  }

  private restore(snapshot: ApsSnapshot): void {
    for (const plan of snapshot.plans) {
      this.plans.set(plan.id, {
        id: plan.id,
        week: plan.week,
        publishedVersion: plan.publishedVersion,
        versions: new Map(plan.versions.map((version) => [version.version, version])),
      });
    }
    this.publishes.push(...snapshot.publishes);
    for (const operation of snapshot.operations) this.operations.set(operation.idempotencyKey, operation);
  }
}
