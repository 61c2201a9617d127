/**
 * Who a request to the transcripts API is from, trusting the API server's front proxy only — the
 * request-header authentication every aggregated API server does: the connection's client certificate
 * must chain to the requestheader CA that ConfigMap `kube-system/extension-apiserver-authentication`
 * publishes and carry an allowed common name; then, and only then, the `X-Remote-*` headers (names
 * from the same ConfigMap) name the user. A person's bearer token is never read. Pure.
 */
import type { PeerCertificate } from "node:tls";
import { z } from "zod";

/** The ConfigMap the API server publishes its authentication settings in. */
export const EXTENSION_AUTHENTICATION_CONFIGMAP = {
  namespace: "kube-system",
  name: "extension-apiserver-authentication",
} as const;

/** What the API server's `--requestheader-*` flags say, as the ConfigMap publishes them. */
export interface RequestHeaderConfig {
  /** PEM bundle the front proxy's client certificate must chain to. */
  clientCa: string;
  /** Common names allowed; empty = any certificate the CA signed (the API server's own rule). */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

const HeaderList = z.array(z.string());

function listOf(data: Record<string, string>, key: string): string[] {
  const raw = data[key];
  if (raw === undefined || raw === "") return [];
  const parsed = HeaderList.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new Error(`${key} is not a JSON list of strings`);
  return parsed.data;
}

/**
 * The requestheader settings of the ConfigMap's `data`. Errors: throws naming what is missing — the
 * API server publishes `requestheader-client-ca-file` only when it runs with `--requestheader-client-ca-file`
 * (without it, it serves no aggregated API at all).
 */
export function requestHeaderConfigOf(data: Record<string, string> | undefined): RequestHeaderConfig {
  const values = data ?? {};
  const clientCa = values["requestheader-client-ca-file"];
  if (!clientCa) {
    throw new Error(
      `ConfigMap ${EXTENSION_AUTHENTICATION_CONFIGMAP.namespace}/${EXTENSION_AUTHENTICATION_CONFIGMAP.name} has no requestheader-client-ca-file: the API server runs without --requestheader-client-ca-file, so it proxies to no aggregated API`,
    );
  }
  const usernameHeaders = listOf(values, "requestheader-username-headers");
  return {
    clientCa,
    allowedNames: listOf(values, "requestheader-allowed-names"),
    usernameHeaders: usernameHeaders.length > 0 ? usernameHeaders : ["X-Remote-User"],
    uidHeaders: listOf(values, "requestheader-uid-headers"),
    groupHeaders: listOf(values, "requestheader-group-headers"),
    extraHeaderPrefixes: listOf(values, "requestheader-extra-headers-prefix"),
  };
}

/** The user the API server authenticated and proxies for. */
export interface ProxiedUser {
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** A request that did not come from the front proxy; the message says what to do instead. */
export class NotFromFrontProxy extends Error {
  override readonly name = "NotFromFrontProxy";
}

type Headers = Record<string, string | string[] | undefined>;

function values(headers: Headers, name: string): string[] {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v) => v !== "");
}

/**
 * The proxied user of a request on a TLS connection: `authorized` is whether the client certificate
 * chained to the requestheader CA (the server asks for one, with that CA as its only trust), `peer`
 * the certificate. Errors: {@link NotFromFrontProxy} when no such certificate, a common name not
 * allowed, or no user header.
 */
export function proxiedUser(
  connection: { authorized: boolean; peer: PeerCertificate | undefined },
  headers: Headers,
  config: RequestHeaderConfig,
): ProxiedUser {
  const via = "read it through the API server: kubectl get --raw /apis/transcripts.gatehouse.dev/…";
  if (!connection.authorized || !connection.peer?.subject) {
    throw new NotFromFrontProxy(
      `only the API server's front proxy may call this API (no client certificate signed by the requestheader CA); ${via}`,
    );
  }
  const cn = connection.peer.subject.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (config.allowedNames.length > 0 && !config.allowedNames.includes(name ?? "")) {
    throw new NotFromFrontProxy(
      `client certificate CN ${JSON.stringify(name)} is not an allowed front proxy (requestheader-allowed-names); ${via}`,
    );
  }
  const username = config.usernameHeaders.flatMap((header) => values(headers, header))[0];
  if (!username) throw new NotFromFrontProxy("the front proxy named no user");
  const uid = config.uidHeaders.flatMap((header) => values(headers, header))[0];
  const groups = config.groupHeaders.flatMap((header) => values(headers, header));
  const extra: Record<string, string[]> = {};
  for (const [header, value] of Object.entries(headers)) {
    const prefix = config.extraHeaderPrefixes.find((p) => header.startsWith(p.toLowerCase()));
    if (!prefix || value === undefined) continue;
    // Extra keys are percent-encoded in header names (the API server's requestheader rule).
    const key = decodeURIComponent(header.slice(prefix.length)).toLowerCase();
    extra[key] = [...(extra[key] ?? []), ...(Array.isArray(value) ? value : [value])];
  }
  return { username, ...(uid ? { uid } : {}), groups, extra };
}
