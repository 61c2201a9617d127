import type { CoreV1Api, KubeConfig, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { Reflector, type ReflectorHandler } from "./reflector.ts";

/** Receives the pods bound to the node. */
export type PodHandler = ReflectorHandler<V1Pod>;

/** The pods bound to node `nodeName` (`fieldSelector=spec.nodeName=<node>`), followed by a {@link Reflector}. */
export function podSource(
  kc: KubeConfig,
  core: CoreV1Api,
  nodeName: string,
  handler: PodHandler,
  log: Logger,
): Reflector<V1Pod> {
  return new Reflector<V1Pod>(kc, {
    kind: "pod",
    path: "/api/v1/pods",
    query: { fieldSelector: `spec.nodeName=${nodeName}` },
    list: (query) => core.listPodForAllNamespaces(query),
    handler,
    log,
  });
}
