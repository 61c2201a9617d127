/**
 * Makes a host service that listens on loopback only (Postgres on 127.0.0.1:5432) reachable from pods:
 * a TCP forwarder on the bridge address, its port opened in the pod firewall, to that loopback address.
 * Pods cannot reach the host's loopback (each pod's 127.0.0.1 is its own), and the firewall lets them
 * reach only opened ports of the bridge address (`firewall.ts`).
 */
import { exposeHostPort } from "./firewall.ts";
import { startTcpProxy, type TcpProxy, type TcpTarget } from "./tcp-proxy.ts";

/**
 * Listens on `bridgeIP` (a free port), opens that port for the pods of harness `instance`, and forwards
 * every connection to `target`. Throws the listen error or an `unavailable` HarnessError when the
 * instance's firewall does not exist.
 */
export async function forwardHostService(
  instance: number,
  bridgeIP: string,
  target: TcpTarget,
): Promise<TcpProxy> {
  const proxy = await startTcpProxy(bridgeIP, 0, () => [target]);
  try {
    await exposeHostPort(instance, proxy.port);
  } catch (error) {
    await proxy.close();
    throw error;
  }
  return proxy;
}
