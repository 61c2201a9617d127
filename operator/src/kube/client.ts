/**
 * Kubernetes API clients for the operator, from a kubeconfig file (and context) or the in-cluster
 * ServiceAccount. Patch content types are always chosen explicitly: client-node's default, strategic
 * merge, fails with 415 on custom resources (NOTES.md).
 */
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
  KubeConfig,
  KubernetesObjectApi,
  NetworkingV1Api,
  type RequestContext,
  ServerConfiguration,
  setHeaderMiddleware,
} from "@kubernetes/client-node";

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

  constructor(userAgent: string) {
    super();
    this.userAgent = userAgent;
  }

  /** Watches and our own lists authenticate through this. */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    context.setHeaderParam("User-Agent", this.userAgent);
  }

  /** As KubeConfig.makeApiClient, but its User-Agent middleware sends ours (config.js sets its own). */
  override makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this },
      middleware: [setHeaderMiddleware("User-Agent", this.userAgent)],
    });
    return new apiClientType(configuration);
  }
}

/**
 * Loads a kubeconfig (file and optional context) or, with no file, the in-cluster configuration;
 * every request then sends `userAgent` (default `gatehouse-operator`). `mountRoot` (the local node's
 * LOCAL_NODE_ROOT, test/cluster/README.md) prefixes the ServiceAccount files of the in-cluster
 * configuration (`<mountRoot>/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}`),
 * which a kubelet without a mount namespace cannot put at their real paths.
 */
export function loadKubeConfig(
  file?: string,
  context?: string,
  userAgent = "gatehouse-operator",
  mountRoot?: string,
): KubeConfig {
  const config = new IdentifiedKubeConfig(userAgent);
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
 * metav1.Status (NOTES.md), whose `reason` and `message` say what the API server refused.
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
