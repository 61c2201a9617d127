import { type CoordinationV1Api, V1MicroTime } from "@kubernetes/client-node";
import { apiStatusCode } from "../kube-errors.ts";
import { MERGE_PATCH } from "./kube-client.ts";

/** How often the node renews its Lease (the kubelet's default), in milliseconds. */
export const LEASE_RENEW_MS = 10_000;
/** Lease duration the node claims (the kubelet's default), in seconds. */
const LEASE_DURATION_SECONDS = 40;
const NODE_LEASE_NAMESPACE = "kube-node-lease";

/**
 * The node's Lease `kube-node-lease/<node>`: {@link renew} creates it (owned by the Node, so it goes when
 * the Node goes) or merge-patches `spec.renewTime`; the node calls it every {@link LEASE_RENEW_MS}.
 * renewTime is a MicroTime (six fractional digits), sent through client-node's V1MicroTime.
 * The node lifecycle controller treats a node whose Lease stops being renewed as unhealthy and taints it.
 */
export class NodeLease {
  private readonly api: CoordinationV1Api;
  private readonly nodeName: string;
  private readonly nodeUID: string;

  constructor(api: CoordinationV1Api, nodeName: string, nodeUID: string) {
    this.api = api;
    this.nodeName = nodeName;
    this.nodeUID = nodeUID;
  }

  /** Sets renewTime to now, creating the Lease when it is missing; throws the API error. */
  async renew(): Promise<void> {
    const renewTime = new V1MicroTime();
    try {
      await this.api.patchNamespacedLease(
        { namespace: NODE_LEASE_NAMESPACE, name: this.nodeName, body: { spec: { renewTime } } },
        MERGE_PATCH,
      );
      return;
    } catch (err) {
      if (apiStatusCode(err) !== 404) throw err;
    }
    await this.api.createNamespacedLease({
      namespace: NODE_LEASE_NAMESPACE,
      body: {
        metadata: {
          name: this.nodeName,
          ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.nodeName, uid: this.nodeUID }],
        },
        spec: {
          holderIdentity: this.nodeName,
          leaseDurationSeconds: LEASE_DURATION_SECONDS,
          renewTime,
        },
      },
    });
  }
}
