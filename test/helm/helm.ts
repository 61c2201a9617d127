/**
 * Helm as the chart tests run it: the binary `test/helm/build.sh` builds from Helm's Go module (cached
 * outside the repo; instant once built), and the chart `charts/gatehouse` rendered with it.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CHART_DIR = join(REPO_ROOT, "charts/gatehouse");
/** The Kubernetes version the chart tests render for: the oldest the chart supports (Chart.yaml). */
export const KUBE_VERSION = "1.33.0";

/** What a finished command printed, and how it exited (`code` 0 = success). */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A rendered Kubernetes object, as far as the tests look at it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

function run(file: string, args: readonly string[], timeoutMs: number): Promise<HelmResult> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: REPO_ROOT, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr: stderr || (error && code !== 0 ? error.message : "") });
      },
    );
  });
}

let helmPath: Promise<string> | undefined;

/**
 * The path of the `helm` binary: `$GATEHOUSE_HELM` if set, else `bin/helm` of the folder
 * `test/helm/build.sh` prints (which builds it first when the cache is missing: minutes). Throws with
 * the build's output when it fails.
 */
export function resolveHelm(): Promise<string> {
  helmPath ??= (async () => {
    if (process.env.GATEHOUSE_HELM) return process.env.GATEHOUSE_HELM;
    const built = await run(join(REPO_ROOT, "test/helm/build.sh"), [], 60 * 60 * 1000);
    const dir = built.stdout.trim().split("\n").at(-1) ?? "";
    const path = join(dir, "helm");
    if (built.code !== 0 || !existsSync(path)) {
      throw new Error(`test/helm/build.sh failed (exit ${built.code}): ${built.stderr.trim()}`);
    }
    return path;
  })();
  return helmPath;
}

/** Runs `helm args…` from the repo root; resolves with its result whatever the exit code. */
export async function helm(args: readonly string[]): Promise<HelmResult> {
  return await run(await resolveHelm(), args, 120_000);
}

/** Options of {@link renderChart}. */
export interface RenderOptions {
  release?: string;
  namespace?: string;
  /** Values files (paths relative to the repo root). */
  valuesFiles?: readonly string[];
  /** `--set-json key=json` pairs. */
  setJson?: Record<string, unknown>;
}

/** The `helm template` arguments for `options` (release `gatehouse` in `gatehouse-system` by default). */
export function templateArgs(options: RenderOptions = {}): string[] {
  const args = [
    "template",
    options.release ?? "gatehouse",
    CHART_DIR,
    "--namespace",
    options.namespace ?? "gatehouse-system",
    "--kube-version",
    KUBE_VERSION,
  ];
  for (const file of options.valuesFiles ?? []) args.push("-f", join(REPO_ROOT, file));
  for (const [key, value] of Object.entries(options.setJson ?? {})) {
    args.push("--set-json", `${key}=${JSON.stringify(value)}`);
  }
  return args;
}

/**
 * Renders the chart with `helm template` and parses every document. Throws with Helm's stderr when it
 * fails, or when a document is not YAML.
 */
export async function renderChart(options: RenderOptions = {}): Promise<Manifest[]> {
  const result = await helm(templateArgs(options));
  if (result.code !== 0) throw new Error(`helm template failed (exit ${result.code}): ${result.stderr}`);
  const manifests: Manifest[] = [];
  for (const doc of parseAllDocuments(result.stdout)) {
    if (doc.errors.length > 0)
      throw new Error(`helm template printed invalid YAML: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as Manifest | null;
    if (value) manifests.push(value);
  }
  return manifests;
}
