/**
 * Effective session limits (DESIGN §2 AgentSession `spec.limits`, `spec.approval.holdPodFor`): each is
 * the minimum of the user's value and the operator's ceiling; a value the user leaves out is the
 * ceiling itself. The ceilings are the operator's configuration (`SESSION_CEILINGS`, config.ts), so a
 * user can only ask for less than the platform allows, never for more.
 */

/** The operator's ceilings; also the defaults of unset user values. Seconds and token counts as named. */
export interface SessionCeilings {
  maxTurns: number;
  maxToolCalls: number;
  maxWrites: number;
  /** Input plus output tokens of the whole session. */
  tokenBudget: number;
  timeoutSeconds: number;
  holdPodForSeconds: number;
}

/** The ceilings without configuration: 20 turns, 50 tool calls, 5 writes, 200 000 tokens, 1 h, hold 60 s. */
export const defaultSessionCeilings: SessionCeilings = {
  maxTurns: 20,
  maxToolCalls: 50,
  maxWrites: 5,
  tokenBudget: 200_000,
  timeoutSeconds: 3_600,
  holdPodForSeconds: 60,
};

/** What a user asked for (`spec.limits` plus `spec.approval.holdPodForSeconds`); every field optional. */
export type RequestedLimits = Partial<SessionCeilings>;

/** Each limit as `min(requested ?? ceiling, ceiling)`. Pure. */
export function effectiveLimits(requested: RequestedLimits, ceilings: SessionCeilings): SessionCeilings {
  const cap = (key: keyof SessionCeilings) => Math.min(requested[key] ?? ceilings[key], ceilings[key]);
  return {
    maxTurns: cap("maxTurns"),
    maxToolCalls: cap("maxToolCalls"),
    maxWrites: cap("maxWrites"),
    tokenBudget: cap("tokenBudget"),
    timeoutSeconds: cap("timeoutSeconds"),
    holdPodForSeconds: cap("holdPodForSeconds"),
  };
}

/** A limit asked for above its ceiling: the session runs with the ceiling instead. */
export interface LoweredLimit {
  limit: keyof SessionCeilings;
  asked: number;
  ceiling: number;
}

/** Every limit, in the order of SessionCeilings. */
export const LIMIT_NAMES: readonly (keyof SessionCeilings)[] = [
  "maxTurns",
  "maxToolCalls",
  "maxWrites",
  "tokenBudget",
  "timeoutSeconds",
  "holdPodForSeconds",
];

/** The limits of `requested` that their ceiling lowers, in the order of {@link LIMIT_NAMES}. Pure. */
export function loweredLimits(requested: RequestedLimits, ceilings: SessionCeilings): LoweredLimit[] {
  return LIMIT_NAMES.flatMap((limit) => {
    const asked = requested[limit];
    return asked !== undefined && asked > ceilings[limit] ? [{ limit, asked, ceiling: ceilings[limit] }] : [];
  });
}

/** Input plus output tokens of `usage`. */
export function tokensUsed(usage: { inputTokens: number; outputTokens: number }): number {
  return usage.inputTokens + usage.outputTokens;
}

/**
 * Why the session may send no more model requests, or undefined while it may: its metered `usage`
 * reached `tokenBudget` (input plus output tokens of the whole session). Pure.
 */
export function tokenBudgetRefusal(
  tokenBudget: number,
  usage: { inputTokens: number; outputTokens: number },
): string | undefined {
  const used = tokensUsed(usage);
  if (used < tokenBudget) return undefined;
  return `Token budget exhausted: this session used ${used} of its ${tokenBudget} tokens (tokenBudget: spec.limits.tokenBudget, capped by the operator's ceiling); the model proxy refuses further model requests.`;
}
