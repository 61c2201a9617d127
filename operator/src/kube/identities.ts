/**
 * Core's IdentityResolver over identity-binding Secrets (DESIGN §2, §4 step 5): Secrets labelled
 * `gatehouse.dev/identity-binding=<provider>` in the ProviderInstance's namespace map a Kubernetes user
 * name (data key) to that user's account in the business system (value). The namespace is one that
 * session users cannot write, so nobody binds themselves to someone else's account. Several labelled
 * Secrets may split the bindings; a user bound to two different accounts is ambiguous and stays
 * unbound. Secret data keys allow only `[-._a-zA-Z0-9]`, so user names with other characters
 * (e.g. ServiceAccount users) cannot be bound this way.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { IDENTITY_BINDING_LABEL } from "../api/well-known.ts";
import type { IdentityBinding, IdentityResolver } from "../core/ports.ts";
import { type KubeClients, statusCodeOf } from "./client.ts";

/** The binding of `user` in `secrets` (pure; the Secrets are those labelled for one provider). */
export function bindingOf(secrets: readonly V1Secret[], user: string, where: string): IdentityBinding {
  const accounts = new Map<string, string>();
  for (const secret of secrets) {
    const encoded = secret.data?.[user];
    if (encoded === undefined) continue;
    const account = Buffer.from(encoded, "base64").toString("utf8").trim();
    if (account !== "") accounts.set(account, secret.metadata?.name ?? "?");
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
 * Why nobody is bound when the API server refuses the list: the component may read identity bindings
 * only in the namespaces the platform listed (chart value rbac.identityBindingNamespaces).
 */
export function bindingsNotReadableReason(namespace: string): string {
  return (
    `Gatehouse may not read identity bindings in namespace ${namespace}: the platform team adds it to ` +
    "the chart's rbac.identityBindingNamespaces (a RoleBinding of ClusterRole gatehouse-identity-bindings there)"
  );
}

/**
 * Builds the resolver: one labelled list per call, so a changed binding holds at the next call. A
 * namespace the component may not list is "unbound", with the fix, never an internal error.
 */
export function secretIdentityResolver(clients: KubeClients): IdentityResolver {
  return {
    async resolve(provider, subject) {
      const selector = `${IDENTITY_BINDING_LABEL}=${provider.name}`;
      let list: { items: V1Secret[] };
      try {
        list = await clients.core.listNamespacedSecret({
          namespace: provider.namespace,
          labelSelector: selector,
        });
      } catch (error) {
        if (statusCodeOf(error) !== 403) throw error;
        return { bound: false, reason: bindingsNotReadableReason(provider.namespace) };
      }
      return bindingOf(
        list.items,
        subject.user,
        `the Secrets labelled ${selector} in namespace ${provider.namespace}`,
      );
    },
  };
}
