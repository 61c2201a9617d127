/**
 * Core's IdentityResolver over identity-binding Secrets (DESIGN §2, §4 step 5): Secrets labelled
 * `gatehouse.dev/identity-binding=<provider>` in the ProviderInstance's namespace map a Kubernetes user
 * name (data key) to that user's account in the business system (value). The namespace is one that
 * session users cannot write, so nobody binds themselves to someone else's account. Several labelled
 * Secrets may split the bindings; a user bound to two different accounts is ambiguous and stays
 * unbound. Secret data keys allow only `[-._a-zA-Z0-9]`, so user names with other characters
 * (e.g. ServiceAccount users) cannot be bound this way.
 *
 * Only the controller reads Secrets (RBAC cannot narrow `list secrets` to a label, and the gateway
 * parses hostile traffic). It resolves approved dispatch from the Secrets themselves
 * ({@link secretIdentityResolver}) and publishes what the invoke path needs — user names and accounts,
 * nothing else of the Secrets — in ConfigMap IDENTITY_BINDINGS_CONFIGMAP of the operator's namespace
 * (kube/identity-mirror.ts), which the gateway reads by name ({@link publishedIdentityResolver}).
 *
 * Published shape: one data key per provider namespace whose bindings the controller could list, its
 * value `{"<provider>": [{"secret": "<name>", "accounts": {"<user>": "<account>"}}]}` with empty
 * accounts left out, every level sorted, so equal bindings are equal text. A namespace without a key is
 * one the controller may not (or not yet) list.
 */
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import { z } from "zod";
import { IDENTITY_BINDING_LABEL, IDENTITY_BINDINGS_CONFIGMAP } from "../api/well-known.ts";
import { GatehouseError } from "../core/errors.ts";
import type { IdentityBinding, IdentityResolver } from "../core/ports.ts";
import { describeApiError, isNotFound, type KubeClients, statusCodeOf } from "./runtime/client.ts";

/** One identity-binding Secret as published: its name and its non-empty accounts by user. */
export interface BindingSecret {
  secret: string;
  accounts: Record<string, string>;
}

/** The bindings of one provider namespace, by provider name. */
export type NamespaceBindings = Record<string, BindingSecret[]>;

/** Sorted copy of `record`, so equal content serialises to equal text. */
function sortedRecord<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The accounts of one labelled Secret (base64 data decoded, trimmed, empty ones dropped). */
export function bindingSecretOf(secret: V1Secret): BindingSecret {
  const accounts: Record<string, string> = {};
  for (const [user, encoded] of Object.entries(secret.data ?? {})) {
    const account = Buffer.from(encoded, "base64").toString("utf8").trim();
    if (account !== "") accounts[user] = account;
  }
  return { secret: secret.metadata?.name ?? "?", accounts: sortedRecord(accounts) };
}

/** The published bindings of one namespace's labelled Secrets (pure; see the file comment). */
export function namespaceBindingsOf(secrets: readonly V1Secret[]): NamespaceBindings {
  const byProvider: NamespaceBindings = {};
  for (const secret of secrets) {
    const provider = secret.metadata?.labels?.[IDENTITY_BINDING_LABEL];
    if (!provider) continue;
    const list = byProvider[provider] ?? [];
    list.push(bindingSecretOf(secret));
    byProvider[provider] = list;
  }
  for (const list of Object.values(byProvider)) list.sort((a, b) => (a.secret < b.secret ? -1 : 1));
  return sortedRecord(byProvider);
}

/** The binding of `user` among one provider's `secrets` (pure). */
export function bindingOf(secrets: readonly BindingSecret[], user: string, where: string): IdentityBinding {
  const accounts = new Map<string, string>();
  for (const { secret, accounts: bound } of secrets) {
    const account = Object.hasOwn(bound, user) ? bound[user] : undefined;
    if (account !== undefined && account !== "") accounts.set(account, secret);
  }
  if (accounts.size === 1) return { bound: true, account: [...accounts.keys()][0]! };
  if (accounts.size > 1) {
    return {
      bound: false,
      reason: `${user} is bound to ${accounts.size} different accounts (Secrets ${[...accounts.values()].join(", ")}); a platform engineer must keep one`,
    };
  }
  return { bound: false, reason: `${user} has no account binding in ${where}` };
}

/**
 * Why nobody is bound when the controller may not list a namespace's identity bindings: the platform
 * lists the namespace in the chart value rbac.identityBindingNamespaces.
 */
export function bindingsNotReadableReason(namespace: string): string {
  return (
    `Gatehouse may not read identity bindings in namespace ${namespace}: the platform team adds it to ` +
    "the chart's rbac.identityBindingNamespaces (a RoleBinding of ClusterRole gatehouse-identity-bindings there)"
  );
}

const selectorOf = (provider: string) => `${IDENTITY_BINDING_LABEL}=${provider}`;
const whereIn = (provider: string, namespace: string) =>
  `the Secrets labelled ${selectorOf(provider)} in namespace ${namespace}`;

/**
 * The controller's resolver, for approved dispatch: one labelled list per call, so a changed binding
 * holds at the next dispatch. A namespace it may not list is "unbound", with the fix, never an
 * internal error.
 */
export function secretIdentityResolver(clients: KubeClients): IdentityResolver {
  return {
    async resolve(provider, subject) {
      let list: { items: V1Secret[] };
      try {
        list = await clients.core.listNamespacedSecret({
          namespace: provider.namespace,
          labelSelector: selectorOf(provider.name),
        });
      } catch (error) {
        if (statusCodeOf(error) !== 403) throw error;
        return { bound: false, reason: bindingsNotReadableReason(provider.namespace) };
      }
      return bindingOf(
        list.items.map(bindingSecretOf),
        subject.user,
        whereIn(provider.name, provider.namespace),
      );
    },
  };
}

const PublishedNamespace = z.record(
  z.string(),
  z.array(z.object({ secret: z.string(), accounts: z.record(z.string(), z.string()) })),
);

/** The published bindings of `namespace` in the ConfigMap's `data`, or undefined when it has no key. */
export function publishedBindingsOf(
  data: Record<string, string> | undefined,
  namespace: string,
): NamespaceBindings | undefined {
  const text = data && Object.hasOwn(data, namespace) ? data[namespace] : undefined;
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GatehouseError("internal", `the published identity bindings of ${namespace} are not JSON`);
  }
  const parsed = PublishedNamespace.safeParse(json);
  if (!parsed.success) {
    throw new GatehouseError(
      "internal",
      `the published identity bindings of ${namespace} are malformed: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

/**
 * The gateway's resolver, for the invoke path: one read of the controller's ConfigMap per call, so a
 * binding the controller republished holds at the next call. No ConfigMap yet, or no key for the
 * namespace, is "unbound" with the reason; an API error is `unavailable`.
 */
export function publishedIdentityResolver(core: CoreV1Api, operatorNamespace: string): IdentityResolver {
  const configMap = `ConfigMap ${operatorNamespace}/${IDENTITY_BINDINGS_CONFIGMAP}`;
  return {
    async resolve(provider, subject) {
      let data: Record<string, string> | undefined;
      try {
        data = (
          await core.readNamespacedConfigMap({
            name: IDENTITY_BINDINGS_CONFIGMAP,
            namespace: operatorNamespace,
          })
        ).data;
      } catch (error) {
        if (!isNotFound(error)) {
          throw new GatehouseError("unavailable", `cannot read ${configMap}: ${describeApiError(error)}`, {
            cause: error,
          });
        }
        return {
          bound: false,
          reason: `no identity bindings are published yet: gatehouse-controller publishes them in ${configMap}`,
        };
      }
      const bindings = publishedBindingsOf(data, provider.namespace);
      if (!bindings) return { bound: false, reason: bindingsNotReadableReason(provider.namespace) };
      const secrets = Object.hasOwn(bindings, provider.name) ? bindings[provider.name]! : [];
      return bindingOf(secrets, subject.user, whereIn(provider.name, provider.namespace));
    },
  };
}
