/**
 * The transcripts API behind the local API server, as the chart sets it up in a cluster: APIService
 * `v1alpha1.transcripts.gatehouse.dev` with the CA of the gateway's serving certificate, its Service in
 * the operator's namespace — here without a selector, its EndpointSlice pointing at the gateway on the
 * host through the environment's TCP proxy to a live replica (the aggregator dials endpoint addresses:
 * `--enable-aggregator-routing`, no kube-proxy here).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  TRANSCRIPTS_API_SERVICE,
  TRANSCRIPTS_GROUP,
  TRANSCRIPTS_VERSION,
} from "../../operator/src/api/transcripts-api.ts";
import { OPERATOR_NAMESPACE } from "../../operator/src/api/well-known.ts";
import { createServingCertificate } from "../cluster/src/index.ts";
import type { Kubectl } from "./kubectl.ts";

/** The Service the APIService names (the chart's is `<release prefix>-transcripts-api`). */
export const TRANSCRIPTS_API_SERVICE_NAME = "gatehouse-transcripts-api";
const PORT_NAME = "https";

/**
 * The gateway's serving certificate files and their CA, for the Service's DNS name: issued once per
 * `dir` (the cluster's run directory), then reused by every environment on that cluster.
 */
export async function transcriptsApiCertificate(
  dir: string,
): Promise<{ certFile: string; keyFile: string; caBundle: string }> {
  const folder = join(dir, "transcripts-api-tls");
  const issued = {
    caCert: join(folder, "ca.crt"),
    cert: join(folder, "tls.crt"),
    key: join(folder, "tls.key"),
  };
  const files = [issued.caCert, issued.cert, issued.key].every((f) => existsSync(f))
    ? issued
    : await createServingCertificate(folder, [`${TRANSCRIPTS_API_SERVICE_NAME}.${OPERATOR_NAMESPACE}.svc`]);
  return {
    certFile: files.cert,
    keyFile: files.key,
    caBundle: readFileSync(files.caCert).toString("base64"),
  };
}

/**
 * Registers the transcripts API served at `address`:`port` and waits until the API server reports it
 * Available (its discovery answered through the aggregator). Returns the unregistration, which the
 * environment runs before the gateway stops: an APIService left unavailable blocks namespace
 * deletion and makes every kubectl discovery complain.
 */
export async function registerTranscriptsApi(
  kubectl: Kubectl,
  target: { address: string; port: number; caBundle: string },
): Promise<() => Promise<void>> {
  const manifests = [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: TRANSCRIPTS_API_SERVICE_NAME, namespace: OPERATOR_NAMESPACE },
      spec: { ports: [{ name: PORT_NAME, port: 443, protocol: "TCP" }] },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: TRANSCRIPTS_API_SERVICE_NAME,
        namespace: OPERATOR_NAMESPACE,
        labels: { "kubernetes.io/service-name": TRANSCRIPTS_API_SERVICE_NAME },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [target.address], conditions: { ready: true } }],
      ports: [{ name: PORT_NAME, port: target.port, protocol: "TCP" }],
    },
    {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: { name: TRANSCRIPTS_API_SERVICE },
      spec: {
        group: TRANSCRIPTS_GROUP,
        version: TRANSCRIPTS_VERSION,
        service: { name: TRANSCRIPTS_API_SERVICE_NAME, namespace: OPERATOR_NAMESPACE, port: 443 },
        caBundle: target.caBundle,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
      },
    },
  ];
  await kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: manifests }),
  );
  await kubectl.ok("admin", [
    "wait",
    "--for=condition=Available",
    "--timeout=60s",
    `apiservice/${TRANSCRIPTS_API_SERVICE}`,
  ]);
  return async () => {
    // All three: the chart's release takes the Service's name over, and an EndpointSlice left behind
    // would still point the aggregator at this environment's stopped gateway.
    await kubectl.run("admin", [
      "delete",
      `apiservice/${TRANSCRIPTS_API_SERVICE}`,
      "--ignore-not-found",
      "--request-timeout=10s",
    ]);
    await kubectl.run("admin", [
      "delete",
      "-n",
      OPERATOR_NAMESPACE,
      `service/${TRANSCRIPTS_API_SERVICE_NAME}`,
      `endpointslice.discovery.k8s.io/${TRANSCRIPTS_API_SERVICE_NAME}`,
      "--ignore-not-found",
      "--request-timeout=10s",
    ]);
  };
}
