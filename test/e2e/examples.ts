/**
 * examples/ applied the way a platform repo is synced: `kubectl kustomize examples/plant-a` renders what
 * the repo holds for the namespace (kustomization.yaml lists it; the sample sessions are not in it), the
 * one placeholder `${APS_URL}` gets the fake APS's address, and a single `kubectl apply` sends it as
 * admin. Every e2e environment, the demo and examples.test.ts apply the examples through this file.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Kubectl, KubectlResult } from "./kubectl.ts";

/** The examples directory of the repository. */
export const EXAMPLES_DIR = fileURLToPath(new URL("../../examples", import.meta.url));
/** The namespace the examples lay out (DESIGN §1), and its directory under examples/. */
export const EXAMPLE_NAMESPACE = "plant-a";
export const EXAMPLE_NAMESPACE_DIR = join(EXAMPLES_DIR, EXAMPLE_NAMESPACE);

// biome-ignore lint/suspicious/noTemplateCurlyInString: provider.yaml holds a literal ${APS_URL} placeholder.
const APS_URL_PLACEHOLDER = "${APS_URL}";

/** The rendered manifests of examples/plant-a with `apsUrl` in place of the placeholder (YAML text). */
export async function renderExamples(kubectl: Kubectl, apsUrl: string): Promise<string> {
  const rendered = await kubectl.ok("admin", ["kustomize", EXAMPLE_NAMESPACE_DIR]);
  if (!rendered.stdout.includes(APS_URL_PLACEHOLDER)) {
    throw new Error(`examples/${EXAMPLE_NAMESPACE} no longer holds the ${APS_URL_PLACEHOLDER} placeholder`);
  }
  return rendered.stdout.replaceAll(APS_URL_PLACEHOLDER, apsUrl);
}

/** Applies the rendered examples as admin; `dryRun` asks the API server to admit them without storing. */
export async function applyExamples(
  kubectl: Kubectl,
  apsUrl: string,
  options: { dryRun?: boolean } = {},
): Promise<KubectlResult> {
  const args = ["apply", "-f", "-", ...(options.dryRun ? ["--dry-run=server"] : [])];
  return kubectl.ok("admin", args, await renderExamples(kubectl, apsUrl));
}
