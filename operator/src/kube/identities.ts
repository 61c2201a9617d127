/**
 * Core's IdentityResolver over identity-binding Secrets (DESIGN §2): Secret
 * `gatehouse-identities-<provider>` in the ProviderInstance's namespace maps a user name (data key) to
 * the business account (value). That namespace is one session users cannot write, so a user cannot
 * bind themselves to someone else's account.
 */
import type { IdentityResolver } from "../core/ports.ts";
import type { KubeClients } from "./client.ts";
import { isNotFound } from "./client.ts";

/** Name of the identity-binding Secret of a provider. */
export function identitySecretName(provider: string): string {
  return `gatehouse-identities-${provider}`;
}

/** Builds the resolver. */
export function secretIdentityResolver(clients: KubeClients): IdentityResolver {
  return {
    async resolve(provider, subject) {
      const name = identitySecretName(provider.name);
      try {
        const secret = await clients.core.readNamespacedSecret({ namespace: provider.namespace, name });
        const encoded = secret.data?.[subject.user];
        if (!encoded)
          return {
            bound: false,
            reason: `${subject.user} has no account binding in Secret ${provider.namespace}/${name}.`,
          };
        return { bound: true, account: Buffer.from(encoded, "base64").toString("utf8").trim() };
      } catch (error) {
        if (isNotFound(error))
          return { bound: false, reason: `Secret ${provider.namespace}/${name} does not exist.` };
        throw error;
      }
    },
  };
}
