/**
 * The local cluster harness (DESIGN §8): a real control plane built from source plus the local node,
 * usable without vitest (the demo, benchmarks).
 */
export { type ControlPlane, type ControlPlaneOptions, startControlPlane } from "./controlplane.ts";
export { HarnessError, type HarnessErrorKind } from "./errors.ts";
export { exposeHostPort } from "./firewall.ts";
export { forwardHostService } from "./host-forwarder.ts";
export { LOCAL_NODE_ROOT } from "./node/env.ts";
export {
  IMAGE_COMMANDS,
  NODE_COMPILE_CACHE,
  type RegisteredImage,
  registerImage,
  resolveImage,
} from "./node/images.ts";
export { containerLogPath, type PodKey } from "./node/layout.ts";
export { type LocalNode, type LocalNodeOptions, startLocalNode } from "./node/start.ts";
export { createClientCertificate, createServingCertificate, FRONT_PROXY_CLIENT_NAME } from "./pki.ts";
export { connectFromPod, podNetns } from "./pod-connect.ts";
export { type EventuallyOptions, eventually } from "./poll.ts";
export type { ExitInfo } from "./process.ts";
export { readyEndpoints, type ServiceProxy, startServiceProxy } from "./service-proxy.ts";
export {
  describeExit,
  KUBELET_RESTART_BACKOFF,
  type RestartBackoff,
  type RestartEvent,
  restartDelayMs,
  type SupervisedRun,
  Supervisor,
} from "./supervisor.ts";
export { startTcpProxy, type TcpProxy, type TcpTarget } from "./tcp-proxy.ts";
