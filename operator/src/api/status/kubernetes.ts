/**
 * Kubernetes' own words that the operator reads or writes: pod phases and the reasons the kubelet
 * gives, metav1.Status reasons, and the statuses of a metav1.Condition. Several are spelled like
 * Gatehouse's words (a pod's `Failed` is not a session's `Failed`, a Status `Forbidden` is not the
 * policy's), so they have their own constants here and code says which it means.
 */
import { byName } from "./words.ts";

/** corev1.PodPhase (k8s.io/api/core/v1/types.go). */
export const POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"] as const;
export type PodPhase = (typeof POD_PHASES)[number];
export const PodPhase = byName(POD_PHASES);

/**
 * Reasons the kubelet writes on a pod or container that the operator looks for: `DeadlineExceeded`
 * (pod.status.reason once activeDeadlineSeconds passed), `ContainerCreating` (a container waiting to
 * start, not a problem), `Error` (a container ended with a non-zero exit code and no other reason).
 */
export const POD_REASONS = ["DeadlineExceeded", "ContainerCreating", "Error"] as const;
export type PodReason = (typeof POD_REASONS)[number];
export const PodReason = byName(POD_REASONS);

/** metav1.StatusReason values the operator answers with or admission policies give (apimachinery types.go). */
export const STATUS_REASONS = [
  "BadRequest",
  "Unauthorized",
  "Forbidden",
  "NotFound",
  "MethodNotAllowed",
  "Expired",
  "Invalid",
  "InternalError",
  "ServiceUnavailable",
] as const;
export type StatusReason = (typeof STATUS_REASONS)[number];
export const StatusReason = byName(STATUS_REASONS);

/**
 * metav1.ConditionStatus. Not among {@link WORDS}: `True` and `False` mean one thing wherever they
 * are written, and the schema (api/common.ts) takes the list from here, where `Unknown` is a pod phase.
 */
export const CONDITION_STATUSES = ["True", "False", "Unknown"] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

/** The words of this module, which no other program file spells (vocabulary.test.ts). */
export const WORDS: readonly string[] = [...POD_PHASES, ...POD_REASONS, ...STATUS_REASONS];
