/**
 * What kube-proxy does for one Service, for the local node that has none: a TCP address on the bridge
 * (reachable from pods once {@link exposeHostPort} opened its port) whose connections go, round-robin,
 * to the ready endpoints of the Service, read from its EndpointSlices (label
 * `kubernetes.io/service-name`, watched with client-node's informer as the local-node identity). With no
 * ready endpoint a connection is closed at once. There is no ClusterIP: clients are given the proxy's
 * address instead (e.g. the agents' GATEWAY_URL).
 *
 * EndpointSlice semantics (ready = `conditions.ready` not false; ports by the Service port's name):
 * https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/
 */
import { DiscoveryV1Api, KubeConfig, makeInformer, type V1EndpointSlice } from "@kubernetes/client-node";
import { exposeHostPort } from "./firewall.ts";
import { startTcpProxy, type TcpTarget } from "./tcp-proxy.ts";

/** Options of {@link startServiceProxy}. */
export interface ServiceProxyOptions {
  kubeconfigPath: string;
  /** Kubeconfig context to watch EndpointSlices as (default `local-node`, whose ClusterRole allows it). */
  context?: string;
  namespace: string;
  /** The Service's name. */
  service: string;
  /**
   * The Service port's name, as its EndpointSlices carry it; unset = the slices' only port (a slice
   * with several ports then offers no endpoint).
   */
  portName?: string;
  /** Address to listen on: the bridge address, so pods can reach it. */
  host: string;
  /** Port to listen on (default 0: a free one). */
  port?: number;
  /** Harness instance whose pod firewall gets the port opened; unset = open nothing. */
  instance?: number;
}

/** A running Service proxy. */
export interface ServiceProxy {
  host: string;
  port: number;
  /** `http://host:port`, for HTTP Services. */
  url: string;
  /** The ready endpoints a connection arriving now could go to, in the order they would be tried. */
  endpoints(): TcpTarget[];
  /** Stops the watch and the listener, closing open connections. */
  close(): Promise<void>;
}

/** The ready `host:port`s of `slices` for the Service port named `portName` (see {@link ServiceProxyOptions}). */
export function readyEndpoints(slices: readonly V1EndpointSlice[], portName?: string): TcpTarget[] {
  const targets: TcpTarget[] = [];
  for (const slice of slices) {
    if (slice.addressType !== "IPv4") continue;
    const ports = slice.ports ?? [];
    const port =
      portName === undefined
        ? ports.length === 1
          ? ports[0]
          : undefined
        : ports.find((p) => (p.name ?? "") === portName);
    if (port?.port === undefined || (port.protocol ?? "TCP") !== "TCP") continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false) continue;
      for (const address of endpoint.addresses) targets.push({ host: address, port: port.port });
    }
  }
  return targets.sort((a, b) => `${a.host}:${a.port}`.localeCompare(`${b.host}:${b.port}`));
}

/**
 * Starts watching the Service's EndpointSlices, then listens (and opens the port in the pod firewall
 * when `instance` is given). Resolves once the first list has arrived. Throws when that list fails
 * (e.g. 403 for an identity without `list endpointslices`) or the listen fails.
 */
export async function startServiceProxy(options: ServiceProxyOptions): Promise<ServiceProxy> {
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfigPath);
  kc.setCurrentContext(options.context ?? "local-node");
  const discovery = kc.makeApiClient(DiscoveryV1Api);
  const selector = `kubernetes.io/service-name=${options.service}`;
  const informer = makeInformer<V1EndpointSlice>(
    kc,
    `/apis/discovery.k8s.io/v1/namespaces/${options.namespace}/endpointslices`,
    () => discovery.listNamespacedEndpointSlice({ namespace: options.namespace, labelSelector: selector }),
    selector,
  );
  let stopped = false;
  let restart: NodeJS.Timeout | undefined;
  // client-node's informer stops on any error but a timeout or 410: start it again.
  informer.on("error", () => {
    if (stopped) return;
    restart = setTimeout(() => void informer.start().catch(() => undefined), 1000);
  });
  await informer.start();

  let next = 0;
  const endpoints = (): TcpTarget[] => {
    const ready = readyEndpoints(informer.list(), options.portName);
    if (ready.length === 0) return [];
    const first = next++ % ready.length;
    return [...ready.slice(first), ...ready.slice(0, first)];
  };
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  try {
    proxy = await startTcpProxy(options.host, options.port ?? 0, endpoints);
    if (options.instance !== undefined) await exposeHostPort(options.instance, proxy.port);
  } catch (error) {
    stopped = true;
    await informer.stop();
    throw error;
  }
  return {
    host: proxy.host,
    port: proxy.port,
    url: `http://${proxy.host}:${proxy.port}`,
    endpoints: () => readyEndpoints(informer.list(), options.portName),
    close: async () => {
      stopped = true;
      clearTimeout(restart);
      await informer.stop();
      await proxy.close();
    },
  };
}
