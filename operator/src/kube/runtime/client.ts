/**
 * Kubernetes API clients for the operator, from a kubeconfig file (and context) or the in-cluster
 * ServiceAccount. Patch content types are always chosen explicitly: client-node's default, strategic
 * merge, fails with 415 on custom resources. Every request of the typed clients is bounded
 * in time (an API server that accepts connections and never answers would otherwise hold the caller —
 * a gateway request authenticating a token, say — for ever); watches and the informers' lists do not
 * go through them.
 *
 * Every request, watch and list of one KubeConfig shares one connection pool (undici Agent) while the
 * TLS material is the same: client-node builds a new Agent for every request, so each request opened
 * its own TLS connection, which then idled until undici's keep-alive timeout — a handshake per request
 * and, under load, hundreds of open connections holding native memory (the controller held 277 to the
 * API server and 137 MiB of malloc heap at 1 000 sessions; docs/operations.md "Memory").
 */
import { createHash } from "node:crypto";
import type https from "node:https";
import {
  AdmissionregistrationV1Api,
  type ApiConstructor,
  ApiException,
  type ApiType,
  AppsV1Api,
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  DiscoveryV1Api,
  type HttpLibrary,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  KubernetesObjectApi,
  NetworkingV1Api,
  type RequestContext,
  ServerConfiguration,
  setHeaderMiddleware,
  wrapHttpLibrary,
} from "@kubernetes/client-node";
import type { Dispatcher } from "undici";
import { GatehouseError } from "../../core/errors.ts";

/** How long one request of the typed clients may take, answer body included, in milliseconds. */
export const API_REQUEST_TIMEOUT_MS = 10_000;

/** The typed API groups the operator uses, sharing one KubeConfig. */
export interface KubeClients {
  config: KubeConfig;
  admission: AdmissionregistrationV1Api;
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  discovery: DiscoveryV1Api;
  networking: NetworkingV1Api;
  authentication: AuthenticationV1Api;
  authorization: AuthorizationV1Api;
  objects: KubernetesObjectApi;
}

/**
 * A KubeConfig whose requests carry a User-Agent naming this replica, as client-go's
 * `<binary>/<version> (...)` does, so the API server's audit log tells replicas apart even though they
 * share one ServiceAccount.
 */
class IdentifiedKubeConfig extends KubeConfig {
  private readonly userAgent: string;
  private readonly requestTimeoutMs: number;
  /** The Agent every request shares, and a digest of the TLS material it was built with. */
  private shared: { tls: string; dispatcher: Dispatcher } | undefined;

  constructor(userAgent: string, requestTimeoutMs: number) {
    super();
    this.userAgent = userAgent;
    this.requestTimeoutMs = requestTimeoutMs;
  }

  /**
   * Every request, watch and list authenticates through this: client-node's headers, our User-Agent,
   * and the shared Agent in place of the one client-node built for this request (unused, so it never
   * connects). A change of the CA, client certificate or key (a rotated file, an exec plugin's new
   * certificate) builds the next Agent; the previous one closes once its requests have ended.
   */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    context.setHeaderParam("User-Agent", this.userAgent);
    const built = context.getDispatcher();
    if (!built) return;
    const tls = await this.tlsDigest();
    if (this.shared?.tls !== tls) {
      const previous = this.shared?.dispatcher;
      this.shared = { tls, dispatcher: built };
      void previous?.close().catch(() => undefined);
    }
    context.setDispatcher(this.shared.dispatcher);
  }

  /** A digest of what client-node builds an Agent's TLS from: the options it would apply now. */
  private async tlsDigest(): Promise<string> {
    const options: https.RequestOptions = {};
    await this.applyToHTTPSOptions(options);
    const hash = createHash("sha256");
    const cluster = this.getCurrentCluster();
    const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } =
      options as https.RequestOptions & {
        servername?: string;
      };
    for (const part of [
      cluster?.server,
      cluster?.proxyUrl,
      ca,
      cert,
      key,
      pfx,
      passphrase,
      rejectUnauthorized,
      servername,
    ]) {
      const value = part === undefined ? "" : Buffer.isBuffer(part) ? part : String(part);
      hash
        .update(String(Buffer.byteLength(value)))
        .update(":")
        .update(value);
    }
    return hash.digest("hex");
  }

  /**
   * As KubeConfig.makeApiClient, but its User-Agent middleware sends ours (config.js sets its own),
   * and every request is bounded by the timeout ({@link boundedHttpLibrary}).
   */
  override makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this },
      middleware: [setHeaderMiddleware("User-Agent", this.userAgent)],
      httpApi: boundedHttpLibrary(this.requestTimeoutMs),
    });
    return new apiClientType(configuration);
  }
}

/**
 * client-node's fetch library with every request aborted after `timeoutMs` (0 = never), answer body
 * included; a request given its own signal keeps it too. The abort rejects with a GatehouseError
 * `unavailable` naming the request and the bound — a typed refusal the gateway answers 503 with, which
 * the agent retries — instead of undici's bare "The operation was aborted due to timeout".
 */
function boundedHttpLibrary(timeoutMs: number): HttpLibrary {
  const fetchLibrary = new IsomorphicFetchHttpLibrary();
  if (timeoutMs <= 0) return fetchLibrary;
  return wrapHttpLibrary({
    async send(request) {
      const bound = AbortSignal.timeout(timeoutMs);
      const own = request.getSignal();
      request.setSignal(own ? AbortSignal.any([own, bound]) : bound);
      const response = await fetchLibrary
        .send(request)
        .toPromise()
        .catch((error: unknown) => {
          throw bound.aborted ? timedOut(request.getHttpMethod(), request.getUrl(), timeoutMs, error) : error;
        });
      // The body is read after send resolves: read it here, where an abort is told apart, so a server
      // that sends the headers and then stalls is cut off with the same error.
      const text = await response.body.text().catch((error: unknown) => {
        throw bound.aborted ? timedOut(request.getHttpMethod(), request.getUrl(), timeoutMs, error) : error;
      });
      response.body = {
        text: async () => text,
        binary: async () => Buffer.from(text, "utf8"),
        stream: () => null,
      };
      return response;
    },
  });
}

/** The error of a request the API server did not answer within `timeoutMs`. */
function timedOut(method: string, url: string, timeoutMs: number, cause: unknown): GatehouseError {
  const { pathname } = new URL(url);
  return new GatehouseError(
    "unavailable",
    `the API server did not answer ${method} ${pathname} within ${timeoutMs / 1000} s; retry shortly`,
    { cause },
  );
}

/**
 * Loads a kubeconfig (file and optional context) or, with no file, the in-cluster configuration;
 * every request then sends `userAgent` (default `gatehouse-operator`) and gives up after
 * `requestTimeoutMs` (default {@link API_REQUEST_TIMEOUT_MS}; 0 = never). `mountRoot` (the local node's
 * LOCAL_NODE_ROOT, test/cluster/README.md) prefixes the ServiceAccount files of the in-cluster
 * configuration (`<mountRoot>/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}`),
 * which a kubelet without a mount namespace cannot put at their real paths.
 */
export function loadKubeConfig(
  file?: string,
  context?: string,
  userAgent = "gatehouse-operator",
  mountRoot?: string,
  requestTimeoutMs = API_REQUEST_TIMEOUT_MS,
): KubeConfig {
  const config = new IdentifiedKubeConfig(userAgent, requestTimeoutMs);
  if (file) config.loadFromFile(file);
  else if (mountRoot) config.loadFromCluster(mountRoot);
  else config.loadFromDefault();
  if (context) config.setCurrentContext(context);
  return config;
}

/** Builds every client from one KubeConfig. */
export function makeClients(config: KubeConfig): KubeClients {
  return {
    config,
    admission: config.makeApiClient(AdmissionregistrationV1Api),
    core: config.makeApiClient(CoreV1Api),
    apps: config.makeApiClient(AppsV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    discovery: config.makeApiClient(DiscoveryV1Api),
    networking: config.makeApiClient(NetworkingV1Api),
    authentication: config.makeApiClient(AuthenticationV1Api),
    authorization: config.makeApiClient(AuthorizationV1Api),
    objects: KubernetesObjectApi.makeApiClient(config),
  };
}

/** The HTTP status of a client-node error, or undefined for anything else (network errors). */
export function statusCodeOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** True when the API server answered 404. */
export function isNotFound(error: unknown): boolean {
  return statusCodeOf(error) === 404;
}

/** True when the API server answered 409 (AlreadyExists or a resourceVersion conflict). */
export function isConflict(error: unknown): boolean {
  return statusCodeOf(error) === 409;
}

/**
 * True when the API server refused a create because the namespace is being deleted: 403 with a
 * metav1.Status cause of type NamespaceTerminating (the NamespaceLifecycle admission plugin,
 * k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle; corev1.NamespaceTerminatingCause).
 */
export function isNamespaceTerminating(error: unknown): boolean {
  if (!(error instanceof ApiException) || error.code !== 403) return false;
  try {
    // metav1.StatusCause serialises its Type as "reason".
    const status = JSON.parse(String(error.body)) as { details?: { causes?: Array<{ reason?: string }> } };
    return status.details?.causes?.some((c) => c.reason === "NamespaceTerminating") ?? false;
  } catch {
    return false;
  }
}

/**
 * A readable one-line description of a client-node error: `ApiException.body` is a string holding a
 * metav1.Status, whose `reason` and `message` say what the API server refused.
 */
export function describeApiError(error: unknown): string {
  if (error instanceof ApiException) {
    try {
      const status = JSON.parse(String(error.body)) as { reason?: string; message?: string };
      return `${error.code} ${status.reason ?? ""}: ${status.message ?? String(error.body)}`;
    } catch {
      return `${error.code}: ${String(error.body)}`;
    }
  }
  return error instanceof Error ? error.message : String(error);
}
