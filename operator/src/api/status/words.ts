/**
 * What the vocabulary modules of this folder share. Each module holds the words of one kind — its
 * phases, condition types, condition reasons and Event reasons — and the tool call's and Kubernetes'
 * own words live beside them (tool-call.ts, kubernetes.ts). A module is the only place its words are
 * spelled as strings (vocabulary.test.ts): code names them (`SessionPhase.Running`), so a word has
 * one spelling and one meaning. docs/troubleshooting.md's tables and the CRDs' descriptions of
 * `status.phase` and `status.conditions` are generated from the same modules (`make crds`).
 */

/** `{ Pending: "Pending", … }` of a list of words: code names a word instead of spelling it. */
export function byName<const T extends string>(words: readonly T[]): { readonly [K in T]: K } {
  return Object.freeze(Object.fromEntries(words.map((word) => [word, word]))) as { readonly [K in T]: K };
}

/** {@link byName} of the keys of a table keyed by word (a table of {@link Reason}s). */
export function namesOf<const T extends object>(table: T): { readonly [K in keyof T & string]: K } {
  return byName(Object.keys(table) as (keyof T & string)[]);
}

/** One reason of a kind: where people meet it, and what it means and what to do. */
export interface Reason {
  /** Where it is written on this kind: the condition (status, phase), or the Event and its type. Markdown. */
  where: string;
  /** What it means and what to do about it, for the person reading it. Markdown. */
  means: string;
}

/** What one module says of one kind: the generated docs and CRD descriptions read this. */
export interface Vocabulary {
  /** The kind as people write it (`AgentSession`), or what else the words are of (`tool call`). */
  kind: string;
  /** `status.phase`'s values in order, each with what it means (a sentence); empty without phases. */
  phases: readonly string[];
  phaseMeanings: Readonly<Record<string, string>>;
  /** The condition types in order, each with what it says (a sentence). */
  conditions: readonly string[];
  conditionMeanings: Readonly<Record<string, string>>;
  /** The reasons of its conditions (and of other records, for the tool call), in the order docs list them. */
  reasons: Readonly<Record<string, Reason>>;
  /** The reasons of Events on an object of the kind that are not also condition reasons. */
  events: Readonly<Record<string, Reason>>;
  /** What else a reader of the reasons should know (Markdown), printed before them. */
  notes?: string;
}

/** Every word of `vocabulary`: phases, condition types, reasons and Event reasons. */
export function wordsOf(vocabulary: Vocabulary): string[] {
  return [
    ...vocabulary.phases,
    ...vocabulary.conditions,
    ...Object.keys(vocabulary.reasons),
    ...Object.keys(vocabulary.events),
  ];
}

/** The description of `status.phase` in the CRD (`kubectl explain`): each phase and what it means. */
export function phaseDescription(vocabulary: Vocabulary): string {
  const each = vocabulary.phases.map((phase) => `${phase}: ${vocabulary.phaseMeanings[phase]}`);
  return `The ${vocabulary.kind}'s phase. ${each.join(" ")}`;
}

/**
 * The description of `status.conditions` in the CRD: each condition type and what it says, then the
 * reasons they carry; what each reason means and what to do is in docs/troubleshooting.md.
 */
export function conditionsDescription(vocabulary: Vocabulary): string {
  const each = vocabulary.conditions.map((type) => `${type}: ${vocabulary.conditionMeanings[type]}`);
  const reasons = Object.keys(vocabulary.reasons).join(", ");
  return `Conditions (metav1.Condition, one per type). ${each.join(" ")} Reasons: ${reasons}. What each reason means and what to do: docs/troubleshooting.md.`;
}
