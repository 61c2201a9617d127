import { writeFileSync } from "node:fs";
import { stringify } from "yaml";

/** A bearer-token identity in a kubeconfig; the context has the same name as the user. */
export type KubeconfigUser = { name: string; token: string };

/** What {@link writeKubeconfig} needs. */
export type KubeconfigSpec = {
  clusterName: string;
  server: string;
  caPem: string;
  users: readonly KubeconfigUser[];
  currentContext: string;
};

/**
 * Writes a kubeconfig with one cluster (CA embedded, so the file can be copied) and one context per user,
 * named like the user. File mode 0600: it holds bearer tokens.
 */
export function writeKubeconfig(path: string, spec: KubeconfigSpec): void {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: spec.clusterName,
        cluster: {
          server: spec.server,
          "certificate-authority-data": Buffer.from(spec.caPem).toString("base64"),
        },
      },
    ],
    users: spec.users.map((u) => ({ name: u.name, user: { token: u.token } })),
    contexts: spec.users.map((u) => ({ name: u.name, context: { cluster: spec.clusterName, user: u.name } })),
    "current-context": spec.currentContext,
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}
