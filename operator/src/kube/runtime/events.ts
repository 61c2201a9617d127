/**
 * Kubernetes Events about the objects the operator reconciles (core/v1 Event, as client-go's
 * record.EventRecorder writes them; `kubectl describe` and `kubectl events` show them). One Event per
 * call, named `<object>.<random hex>`; a failure to record is logged, never thrown — an Event is a
 * courtesy to humans, not state. Reasons are UpperCamelCase (API conventions).
 */
import { randomBytes } from "node:crypto";
import type { CoreV1Api } from "@kubernetes/client-node";
import type { Logger } from "pino";

/** What an Event is about. */
export interface EventTarget {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid?: string; resourceVersion?: string };
}

/** Records Events as `component` (source and reporting controller). */
export interface EventRecorder {
  normal(target: EventTarget, reason: string, message: string): void;
  warning(target: EventTarget, reason: string, message: string): void;
}

/** A recorder that creates Events through `core`, in the target's namespace. */
export function eventRecorder(core: CoreV1Api, component: string, log: Logger): EventRecorder {
  const record = (type: "Normal" | "Warning", target: EventTarget, reason: string, message: string) => {
    const now = new Date();
    const { name, namespace, uid, resourceVersion } = target.metadata;
    void core
      .createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace },
          involvedObject: {
            apiVersion: target.apiVersion,
            kind: target.kind,
            name,
            namespace,
            uid,
            resourceVersion,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component },
          reportingComponent: component,
          reportingInstance: component,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      })
      .catch((error: unknown) => log.warn({ err: String(error), reason }, "could not record an Event"));
  };
  return {
    normal: (target, reason, message) => record("Normal", target, reason, message),
    warning: (target, reason, message) => record("Warning", target, reason, message),
  };
}
