/**
 * The words of a ProviderInstance's status: its condition types and their reasons. A ProviderInstance
 * has no phase. words.ts says how the modules are used.
 */
import { NAMESPACE_NOT_SERVED } from "./agentsession.ts";
import { byName, namesOf, type Reason, type Vocabulary, wordsOf } from "./words.ts";

export const PROVIDER_INSTANCE_CONDITION_TYPES = ["Ready", "Healthy"] as const;
export type ProviderInstanceCondition = (typeof PROVIDER_INSTANCE_CONDITION_TYPES)[number];
export const ProviderInstanceCondition = byName(PROVIDER_INSTANCE_CONDITION_TYPES);

const CONDITION_MEANINGS: Record<ProviderInstanceCondition, string> = {
  Ready: "Whether the provider can take calls: a pod is ready, its manifest was read and it is not disabled.",
  Healthy: "Whether the last health check (GET /v1/manifest) reached the provider.",
};

/** Why a ProviderInstance is or is not Ready and Healthy (the printer column Reason shows Ready's). */
export const PROVIDER_INSTANCE_REASONS = {
  NamespaceNotServed: { where: "Ready=False", means: NAMESPACE_NOT_SERVED },
  NoReadyEndpoints: {
    where: "Ready=False",
    means:
      "No provider pod is Ready; the message says what the pods wait for (`ImagePullBackOff`, `CrashLoopBackOff`, `ImageNotInMap` on the local node). `kubectl describe pod -n NS -l gatehouse.dev/provider=NAME`, then the pod's logs (its `spec.config`, e.g. the business system's URL).",
  },
  ManifestFetched: {
    where: "Ready=True",
    means: "The provider answered its manifest; `status.manifest` lists what it offers.",
  },
  ManifestAnswered: { where: "Healthy=True", means: "The last health check reached the provider." },
  ManifestUnavailable: {
    where: "Ready=False, Healthy=False",
    means:
      "`GET /v1/manifest` failed (message has the error) for 20 s or more (a shorter outage keeps the last good manifest; the operator logs each failure): provider logs; a NetworkPolicy must admit the operator's pods; a provider must answer on its port.",
  },
  Disabled: {
    where: "Ready=False",
    means:
      "`spec.disabled` is set: no new calls run, and its Capabilities are not offered (they show `Disabled` too); the workloads and health checks go on. Unset it to resume.",
  },
} as const satisfies Record<string, Reason>;
export type ProviderInstanceReason = keyof typeof PROVIDER_INSTANCE_REASONS;
export const ProviderInstanceReason = namesOf(PROVIDER_INSTANCE_REASONS);

export const PROVIDER_INSTANCE_VOCABULARY: Vocabulary = {
  kind: "ProviderInstance",
  phases: [],
  phaseMeanings: {},
  conditions: PROVIDER_INSTANCE_CONDITION_TYPES,
  conditionMeanings: CONDITION_MEANINGS,
  reasons: PROVIDER_INSTANCE_REASONS,
  events: {},
};

/** The words of this module, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = wordsOf(PROVIDER_INSTANCE_VOCABULARY);
