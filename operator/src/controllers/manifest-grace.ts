/**
 * Rides out short provider hiccups. Every health check of a ProviderInstance (30 s) and every
 * reconcile of its Capabilities fetches `GET /v1/manifest`, each with a 5 s timeout. On a loaded node
 * one of them times out now and then. Without a grace, that one timeout turns the Capability
 * `Ready=False` at once, and a session that starts in that second is given no tool for it (seen in CI:
 * a read capability went ProviderNotReady for a single 5 s timeout, and the session starting a second
 * later failed).
 *
 * So a failed fetch from an endpoint that answered before returns that endpoint's last good manifest
 * while the failures have lasted less than `graceMs`. A longer streak throws as before, and the
 * reconcilers mark the provider and its Capabilities not Ready. A provider that really goes away
 * loses its ready endpoints first (its pod's readiness probe), which no grace hides.
 */
import type { Manifest } from "@gatehouse/provider-sdk";
import type { ManifestSource } from "./providerinstance/reconciler.ts";

/** How long a failing endpoint may keep serving its last good manifest, in ms (less than the 30 s health interval). */
export const MANIFEST_GRACE_MS = 20_000;
/** Endpoints remembered at most (pod IPs change with every rollout); the oldest is forgotten first. */
const MAX_ENDPOINTS = 256;

export interface ManifestGraceOptions {
  graceMs?: number;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** Told each time a last good manifest stands in for a failed fetch. */
  onStale?: (endpoint: string, error: unknown, failingForMs: number) => void;
}

/**
 * `source` with the grace described in the file comment. Errors: the fetch's own error when the
 * endpoint never answered, or has been failing for `graceMs` or longer.
 */
export function manifestsWithGrace(
  source: ManifestSource,
  options: ManifestGraceOptions = {},
): ManifestSource {
  const graceMs = options.graceMs ?? MANIFEST_GRACE_MS;
  const now = options.now ?? Date.now;
  const lastGood = new Map<string, Manifest>();
  const failingSince = new Map<string, number>();
  return {
    async fetchManifest(endpoint) {
      try {
        const manifest = await source.fetchManifest(endpoint);
        lastGood.delete(endpoint); // re-inserted last: Map order is the eviction order
        lastGood.set(endpoint, manifest);
        if (lastGood.size > MAX_ENDPOINTS) lastGood.delete(lastGood.keys().next().value!);
        failingSince.delete(endpoint);
        return manifest;
      } catch (error) {
        const since = failingSince.get(endpoint) ?? now();
        if (lastGood.has(endpoint)) failingSince.set(endpoint, since);
        const failingForMs = now() - since;
        const last = lastGood.get(endpoint);
        if (!last || failingForMs >= graceMs) throw error;
        options.onStale?.(endpoint, error, failingForMs);
        return last;
      }
    },
  };
}
