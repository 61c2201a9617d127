import type { CoreV1Api } from "@kubernetes/client-node";
import { HarnessError } from "../errors.ts";
import type { PodKey } from "./layout.ts";

/** What a projected `serviceAccountToken` source asks for. */
export type TokenSpec = { serviceAccountName: string; audience?: string; expirationSeconds: number };

type CachedToken = { token: string; refreshAt: number };

/** Fraction of a token's lifetime after which it is replaced (the kubelet uses 80 %). */
export const TOKEN_REFRESH_FRACTION = 0.8;

/**
 * ServiceAccount tokens for pods, obtained through the TokenRequest API bound to the pod (boundObjectRef
 * kind Pod, name, uid) and cached until 80 % of their lifetime has passed. The lifetime counted is the
 * shorter of the requested one and the one granted, so an API server that extends tokens
 * (`--service-account-extend-token-expiration`) does not stretch the refresh period.
 */
export class ServiceAccountTokens {
  private readonly core: CoreV1Api;
  private readonly cache = new Map<string, CachedToken>();

  constructor(core: CoreV1Api) {
    this.core = core;
  }

  /** A valid token for `spec` bound to `pod`; asks the API server when none is cached or it is due. */
  async get(pod: PodKey, spec: TokenSpec, now = Date.now()): Promise<string> {
    const key = `${pod.uid}|${spec.serviceAccountName}|${spec.audience ?? ""}|${spec.expirationSeconds}`;
    const cached = this.cache.get(key);
    if (cached && now < cached.refreshAt) return cached.token;
    const answer = await this.core.createNamespacedServiceAccountToken({
      namespace: pod.namespace,
      name: spec.serviceAccountName,
      body: {
        spec: {
          audiences: spec.audience ? [spec.audience] : [],
          expirationSeconds: spec.expirationSeconds,
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.name, uid: pod.uid },
        },
      },
    });
    const token = answer.status?.token;
    if (!token) {
      throw new HarnessError(
        "unavailable",
        `TokenRequest for ${pod.namespace}/${spec.serviceAccountName} returned no token`,
      );
    }
    const expiresAt = answer.status?.expirationTimestamp
      ? new Date(answer.status.expirationTimestamp).getTime()
      : now + spec.expirationSeconds * 1000;
    const lifetimeMs = Math.min(spec.expirationSeconds * 1000, expiresAt - now);
    this.cache.set(key, { token, refreshAt: now + TOKEN_REFRESH_FRACTION * lifetimeMs });
    return token;
  }

  /** The earliest time (ms since epoch) a cached token of `podUID` is due, or undefined. */
  nextRefreshAt(podUID: string): number | undefined {
    let next: number | undefined;
    for (const [key, cached] of this.cache) {
      if (key.startsWith(`${podUID}|`) && (next === undefined || cached.refreshAt < next))
        next = cached.refreshAt;
    }
    return next;
  }

  /** Drops every cached token of `podUID`. */
  forget(podUID: string): void {
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${podUID}|`)) this.cache.delete(key);
  }
}
