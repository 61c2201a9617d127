/**
 * The identity-binding mirror (the controller's side of kube/identities.ts): an informer on the
 * labelled Secrets of every namespace that holds a ProviderInstance, and a publisher that writes what
 * the invoke path needs into ConfigMap IDENTITY_BINDINGS_CONFIGMAP of the operator's namespace, so the
 * gateway reads bindings without any Secret access.
 *
 * - A namespace is published once its informer has listed it, and unpublished when a list or watch is
 *   refused (401/403: the platform has not listed it in rbac.identityBindingNamespaces, or took it
 *   away) — so the gateway names the fix instead of serving bindings it can no longer see. Until its
 *   first list succeeds or is refused, a namespace keeps what is published (a restarted or new leader
 *   does not blank the bindings while its informers list). A watch
 *   already open when its RoleBinding goes keeps streaming until the API server ends it (≤ 10 min):
 *   Kubernetes checks RBAC per request.
 * - Every Secret change republishes at once (coalesced: one write in flight, one queued); a periodic
 *   check restores a ConfigMap someone else edited or deleted.
 * - A publication above {@link MAX_PUBLISHED_BYTES} is refused and logged, keeping the last one: a
 *   ConfigMap holds at most 1 MiB.
 */
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { IDENTITY_BINDING_LABEL, IDENTITY_BINDINGS_CONFIGMAP } from "../api/well-known.ts";
import { namespaceBindingsOf } from "./identities.ts";
import { publishConfigMap } from "./published-configmap.ts";
import type { Caches } from "./runtime/caches.ts";
import { type KubeClients, statusCodeOf } from "./runtime/client.ts";
import { Informer, ListError } from "./runtime/informer.ts";

/** The ConfigMap's limit is 1 MiB of data; leave room for metadata. */
export const MAX_PUBLISHED_BYTES = 900 * 1024;
const DEFAULT_RECHECK_MS = 30_000;

/** What the mirror knows of one namespace: its listed Secrets, not yet known, or refused. */
export type NamespaceState =
  | { state: "listed"; secrets: readonly V1Secret[] }
  | { state: "pending" }
  | { state: "refused" };

/**
 * The ConfigMap data (pure; kube/identities.ts has the shape): each listed namespace's Secrets, each
 * pending one's `previous` value if it had one; refused and unwatched namespaces have no key.
 */
export function publishedData(
  namespaces: ReadonlyMap<string, NamespaceState>,
  previous: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const namespace of [...namespaces.keys()].sort()) {
    const known = namespaces.get(namespace);
    if (known?.state === "listed") data[namespace] = JSON.stringify(namespaceBindingsOf(known.secrets));
    else if (known?.state === "pending" && Object.hasOwn(previous, namespace))
      data[namespace] = previous[namespace]!;
  }
  return data;
}

/** A refusal the platform fixes with a RoleBinding, not a passing fault. */
function isRefused(error: unknown): boolean {
  const code =
    error instanceof ListError
      ? error.code
      : (statusCodeOf(error) ?? (error as { statusCode?: number })?.statusCode);
  return code === 401 || code === 403;
}

/** Options of {@link startIdentityMirror}. */
export interface IdentityMirrorOptions {
  clients: KubeClients;
  caches: Pick<Caches, "providers">;
  /** The operator's namespace, where the ConfigMap lives. */
  namespace: string;
  log: Logger;
  /** How often to re-check the ConfigMap, in milliseconds (default 30 000). */
  recheckMs?: number;
}

interface Watched {
  informer: Informer<V1Secret & KubernetesObject>;
  state: NamespaceState["state"];
}

/** Starts the mirror; `stop()` ends every informer and waits for a write in flight. */
export function startIdentityMirror(options: IdentityMirrorOptions): { stop(): Promise<void> } {
  const { clients, caches, namespace, log } = options;
  const where = `ConfigMap ${namespace}/${IDENTITY_BINDINGS_CONFIGMAP}`;
  const watched = new Map<string, Watched>();
  let stopped = false;
  let writing: Promise<void> = Promise.resolve();
  let queued = false;

  /**
   * Watches `ns`'s labelled Secrets. A namespace refused after it was listed gets a fresh informer,
   * started refused: the informer re-watches after an error without listing, and only a list makes
   * the namespace published again.
   */
  const watch = (ns: string, initial: "pending" | "refused" = "pending") => {
    const entry: Watched = {
      state: initial,
      informer: new Informer<V1Secret & KubernetesObject>(clients.config, {
        path: `/api/v1/namespaces/${ns}/secrets`,
        labelSelector: IDENTITY_BINDING_LABEL,
        log,
        onListed: () => {
          entry.state = "listed";
          schedule();
        },
        onRestart: (reason, error) => {
          if (reason !== "error" || !isRefused(error) || entry.state === "refused") return;
          const wasListed = entry.state === "listed";
          entry.state = "refused";
          log.warn(
            { namespace: ns },
            `may not list identity bindings in ${ns} (rbac.identityBindingNamespaces); publishing none for it`,
          );
          if (wasListed && watched.get(ns) === entry && !stopped) {
            void entry.informer.stop();
            watch(ns, "refused");
          }
          schedule();
        },
      }),
    };
    entry.informer.onChange(() => {
      if (entry.state === "listed") schedule();
    });
    watched.set(ns, entry);
    // Not awaited: a namespace the controller may not list retries with backoff and stays unpublished.
    void entry.informer.start();
  };

  const reconcileNamespaces = () => {
    if (stopped) return;
    const wanted = new Set(caches.providers.list().map((p) => p.metadata?.namespace ?? ""));
    wanted.delete("");
    for (const ns of wanted) if (!watched.has(ns)) watch(ns);
    for (const [ns, entry] of watched) {
      if (wanted.has(ns)) continue;
      watched.delete(ns);
      void entry.informer.stop();
      schedule();
    }
  };

  const states = (): Map<string, NamespaceState> =>
    new Map(
      [...watched].map(([ns, entry]): [string, NamespaceState] => [
        ns,
        entry.state === "listed"
          ? { state: "listed", secrets: entry.informer.list() }
          : { state: entry.state },
      ]),
    );

  async function publish(): Promise<void> {
    const wrote = await publishConfigMap(clients.core, namespace, IDENTITY_BINDINGS_CONFIGMAP, (current) => {
      const data = publishedData(states(), current);
      const size = Object.entries(data).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v), 0);
      if (size <= MAX_PUBLISHED_BYTES) return data;
      log.error(
        { bytes: size, limit: MAX_PUBLISHED_BYTES },
        `the identity bindings exceed what ${where} can hold; keeping the last publication (split providers across namespaces or trim unused bindings)`,
      );
      return undefined;
    });
    if (wrote) log.info({ namespaces: [...watched.keys()] }, `published identity bindings in ${where}`);
  }

  function schedule(): void {
    if (stopped || queued) return;
    queued = true;
    writing = writing.then(async () => {
      queued = false;
      if (stopped) return;
      try {
        await publish();
      } catch (error) {
        log.error(
          { err: error },
          `publishing identity bindings in ${where} failed; retrying at the next check`,
        );
      }
    });
  }

  caches.providers.onChange(reconcileNamespaces);
  reconcileNamespaces();
  schedule();
  const timer = setInterval(schedule, options.recheckMs ?? DEFAULT_RECHECK_MS);
  timer.unref();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([...watched.values()].map((entry) => entry.informer.stop()));
      await writing;
    },
  };
}
