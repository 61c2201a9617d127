import { FRONT_PROXY_CLIENT_NAME, type Pki } from "./pki.ts";

/** The Service range of the local cluster; its first address is the `kubernetes` Service. */
export const SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24";

/** The first address of {@link SERVICE_CLUSTER_IP_RANGE}, in the API server certificate. */
export const KUBERNETES_SERVICE_IP = "10.0.0.1";

/** The API server's secure port on the bridge address. */
export const API_SERVER_PORT = 6443;

/** ServiceAccount token issuer (and default API audience). */
export const SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

/** etcd flags: one member on loopback, no fsync (test data; the flags envtest uses). */
export function etcdArgs(o: { dataDir: string; clientPort: number; peerPort: number }): string[] {
  const client = `http://127.0.0.1:${o.clientPort}`;
  const peer = `http://127.0.0.1:${o.peerPort}`;
  return [
    "--name=default",
    `--data-dir=${o.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    "--unsafe-no-fsync",
    "--log-level=warn",
  ];
}

/** Inputs of {@link apiServerArgs}. */
export type ApiServerInputs = {
  bridgeIP: string;
  etcdClientPort: number;
  pki: Pki;
  tokenAuthFile: string;
  auditPolicyFile: string;
  auditLogPath: string;
  certDir: string;
};

/**
 * kube-apiserver flags: served on the bridge address (so pods reach it) and advertised there (so the
 * `kubernetes` EndpointSlice holds a non-loopback address), Node+RBAC authorization, static tokens,
 * ServiceAccount issuer and keys, audit log, and the default admission plugins (ServiceAccount included)
 * plus NodeRestriction.
 */
export function apiServerArgs(o: ApiServerInputs): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${o.etcdClientPort}`,
    `--bind-address=${o.bridgeIP}`,
    `--advertise-address=${o.bridgeIP}`,
    `--secure-port=${API_SERVER_PORT}`,
    `--cert-dir=${o.certDir}`,
    `--tls-cert-file=${o.pki.servingCert}`,
    `--tls-private-key-file=${o.pki.servingKey}`,
    `--client-ca-file=${o.pki.caCert}`,
    `--token-auth-file=${o.tokenAuthFile}`,
    "--authorization-mode=Node,RBAC",
    "--enable-admission-plugins=NodeRestriction",
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${o.pki.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${o.pki.serviceAccountPrivateKey}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    `--audit-policy-file=${o.auditPolicyFile}`,
    `--audit-log-path=${o.auditLogPath}`,
    "--audit-log-format=json",
    "--audit-log-mode=blocking",
    "--allow-privileged=true",
    // The aggregation layer, as a real cluster serves it: the API server authenticates the person, then
    // proxies to an APIService's server with its front-proxy client certificate and X-Remote-* headers.
    `--requestheader-client-ca-file=${o.pki.frontProxyCaCert}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_NAME}`,
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-uid-headers=X-Remote-Uid",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${o.pki.frontProxyClientCert}`,
    `--proxy-client-key-file=${o.pki.frontProxyClientKey}`,
    // No kube-proxy on the local node: the aggregator dials the APIService's endpoint, not its Service IP.
    "--enable-aggregator-routing=true",
    "--profiling=false",
    "--v=1",
  ];
}

/** Inputs of {@link controllerManagerArgs}. */
/** kube-controller-manager's `--node-monitor-grace-period` and `--node-monitor-period`, in seconds. */
export type NodeMonitorTiming = { gracePeriodSeconds: number; periodSeconds: number };

export type ControllerManagerInputs = {
  kubeconfig: string;
  pki: Pki;
  port: number;
  certDir: string;
  nodeMonitor?: NodeMonitorTiming;
};

/**
 * kube-controller-manager flags: every default controller (`*`: namespace, garbage collector,
 * deployment, replicaset, endpointslice, nodelifecycle, serviceaccount, root-ca-cert-publisher, …), each
 * with its own ServiceAccount credentials, CSR signing by the local CA, no leader election, health on a
 * free loopback port; the node lifecycle's timing when given.
 */
export function controllerManagerArgs(o: ControllerManagerInputs): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
    "--controllers=*",
    `--root-ca-file=${o.pki.caCert}`,
    `--service-account-private-key-file=${o.pki.serviceAccountPrivateKey}`,
    "--use-service-account-credentials=true",
    `--cluster-signing-cert-file=${o.pki.caCert}`,
    `--cluster-signing-key-file=${o.pki.caKey}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    "--allocate-node-cidrs=false",
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    "--profiling=false",
    "--v=1",
    ...(o.nodeMonitor
      ? [
          `--node-monitor-grace-period=${o.nodeMonitor.gracePeriodSeconds}s`,
          `--node-monitor-period=${o.nodeMonitor.periodSeconds}s`,
        ]
      : []),
  ];
}

/** kube-scheduler flags: no leader election, health on a free loopback port. */
export function schedulerArgs(o: { kubeconfig: string; port: number; certDir: string }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    "--profiling=false",
    "--v=1",
  ];
}
