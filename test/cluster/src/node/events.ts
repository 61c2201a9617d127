import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";

/** Normal or Warning, as in core/v1 Event.type. */
export type EventType = "Normal" | "Warning";

/**
 * Records core/v1 Events about pods for humans (`kubectl describe pod`), like the kubelet's Started,
 * Killing, BackOff. Best effort: a failed write is logged and dropped (Events are not evidence).
 */
export class EventRecorder {
  private readonly core: CoreV1Api;
  private readonly nodeName: string;
  private readonly log: Logger;

  constructor(core: CoreV1Api, nodeName: string, log: Logger) {
    this.core = core;
    this.nodeName = nodeName;
    this.log = log;
  }

  /** Emits one Event about `pod` (and `container`, when given). */
  emit(pod: V1Pod, type: EventType, reason: string, message: string, container?: string): void {
    const namespace = pod.metadata?.namespace ?? "default";
    const now = new Date();
    const body = {
      metadata: { generateName: `${pod.metadata?.name ?? "pod"}.`, namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        namespace,
        name: pod.metadata?.name,
        uid: pod.metadata?.uid,
        fieldPath: container ? `spec.containers{${container}}` : undefined,
      },
      type,
      reason,
      message,
      source: { component: "local-node", host: this.nodeName },
      reportingComponent: "gatehouse.dev/local-node",
      reportingInstance: this.nodeName,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    this.core.createNamespacedEvent({ namespace, body }).catch((err: unknown) => {
      this.log.debug({ err, reason }, "could not record event");
    });
  }
}
