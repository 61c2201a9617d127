/**
 * examples/ applied the way a platform repo is synced: `kubectl kustomize examples/gitops/overlays/plant-a`
 * renders what the repo holds for the namespace (the base and the plant-a overlay; the sample sessions
 * in examples/plant-a/ are not in it), the one placeholder `${APS_URL}` gets the fake APS's address, and
 * a single `kubectl apply` sends it as admin. Every e2e environment, the demo and examples.test.ts apply
 * the examples through this file; gitops.test.ts renders every overlay with {@link renderOverlay}.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Kubectl, KubectlResult } from "./kubectl.ts";

/** The examples directory of the repository. */
export const EXAMPLES_DIR = fileURLToPath(new URL("../../examples", import.meta.url));
/** The GitOps layout: `base/` and one overlay per plant under `overlays/`. */
export const GITOPS_DIR = join(EXAMPLES_DIR, "gitops");
/** The namespace of the reference story (DESIGN §1) and its overlay, which the demo and the e2e tests apply. */
export const EXAMPLE_NAMESPACE = "plant-a";
export const EXAMPLE_OVERLAY_DIR = join(GITOPS_DIR, "overlays", EXAMPLE_NAMESPACE);
/** The sample sessions of that namespace (created by their subjects, never synced). */
export const EXAMPLE_SESSIONS_DIR = join(EXAMPLES_DIR, EXAMPLE_NAMESPACE);

// biome-ignore lint/suspicious/noTemplateCurlyInString: provider.yaml holds a literal ${APS_URL} placeholder.
const APS_URL_PLACEHOLDER = "${APS_URL}";

/**
 * `kubectl kustomize <overlayDir>` with `apsUrl` in place of the `${APS_URL}` placeholder (YAML text),
 * as a sync with Flux's postBuild substitution would produce. Throws when kustomize fails or the
 * rendered overlay no longer holds the placeholder.
 */
export async function renderOverlay(kubectl: Kubectl, overlayDir: string, apsUrl: string): Promise<string> {
  const rendered = await kubectl.ok("admin", ["kustomize", overlayDir]);
  if (!rendered.stdout.includes(APS_URL_PLACEHOLDER)) {
    throw new Error(`${overlayDir} no longer holds the ${APS_URL_PLACEHOLDER} placeholder`);
  }
  return rendered.stdout.replaceAll(APS_URL_PLACEHOLDER, apsUrl);
}

/** The rendered plant-a overlay with `apsUrl` in place of the placeholder (YAML text). */
export async function renderExamples(kubectl: Kubectl, apsUrl: string): Promise<string> {
  return await renderOverlay(kubectl, EXAMPLE_OVERLAY_DIR, apsUrl);
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
