/**
 * Identity-binding Secrets as a platform engineer applies them, and the controller's publication of
 * them that the gateway's invoke path reads (kube/identity-mirror.ts). A test that changes a binding
 * and then invokes waits for the publication first: the gateway reads no Secret.
 */
import {
  IDENTITY_BINDING_LABEL,
  IDENTITY_BINDINGS_CONFIGMAP,
  OPERATOR_NAMESPACE,
} from "../../operator/src/api/well-known.ts";
import { type NamespaceBindings, publishedBindingsOf } from "../../operator/src/kube/identities.ts";
import type { BaseEnvironment } from "./environment.ts";
import { eventually } from "./story.ts";

/** How long the controller may take to republish a changed binding (an informer event and one write). */
const PUBLISH_TIMEOUT_MS = 30_000;

/** The bindings the controller publishes for `namespace`, or undefined when it publishes none there. */
export async function publishedBindings(
  env: Pick<BaseEnvironment, "kubectl">,
  namespace: string,
): Promise<NamespaceBindings | undefined> {
  const result = await env.kubectl.run("admin", [
    "get",
    "configmap",
    IDENTITY_BINDINGS_CONFIGMAP,
    "-n",
    OPERATOR_NAMESPACE,
    "-o",
    "json",
  ]);
  if (result.code !== 0) return undefined;
  const configMap = JSON.parse(result.stdout) as { data?: Record<string, string> };
  return publishedBindingsOf(configMap.data, namespace);
}

/** Whether `secret` of `provider` is published with exactly `accounts` (undefined: not published at all). */
async function published(
  env: Pick<BaseEnvironment, "kubectl">,
  namespace: string,
  provider: string,
  secret: string,
  accounts: Record<string, string> | undefined,
): Promise<boolean> {
  const entry = (await publishedBindings(env, namespace))?.[provider]?.find((s) => s.secret === secret);
  if (accounts === undefined) return entry === undefined;
  return (
    JSON.stringify(entry?.accounts ?? null) ===
    JSON.stringify(Object.fromEntries(Object.entries(accounts).sort()))
  );
}

/**
 * Applies identity-binding Secret `name` of ProviderInstance `provider` mapping users to accounts and
 * waits until the controller has published it. `labelled: false` applies it without the label (not a
 * binding: nothing to wait for); `wait: false` does not wait.
 */
export async function bindIdentities(
  env: Pick<BaseEnvironment, "kubectl">,
  namespace: string,
  provider: string,
  name: string,
  accounts: Record<string, string>,
  options: { labelled?: boolean; wait?: boolean } = {},
): Promise<void> {
  const labelled = options.labelled ?? true;
  await env.kubectl.ok(
    "admin",
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace, ...(labelled ? { labels: { [IDENTITY_BINDING_LABEL]: provider } } : {}) },
      stringData: accounts,
    }),
  );
  if (!labelled || options.wait === false) return;
  await eventually(
    `the controller to publish identity bindings ${namespace}/${name}`,
    PUBLISH_TIMEOUT_MS,
    async () => ((await published(env, namespace, provider, name, accounts)) ? true : undefined),
  );
}

/** Deletes identity-binding Secret `name` of `provider` and waits until the controller no longer publishes it. */
export async function unbindIdentities(
  env: Pick<BaseEnvironment, "kubectl">,
  namespace: string,
  provider: string,
  name: string,
): Promise<void> {
  await env.kubectl.ok("admin", ["delete", "secret", name, "-n", namespace, "--ignore-not-found"]);
  await eventually(
    `the controller to unpublish identity bindings ${namespace}/${name}`,
    PUBLISH_TIMEOUT_MS,
    async () => ((await published(env, namespace, provider, name, undefined)) ? true : undefined),
  );
}
