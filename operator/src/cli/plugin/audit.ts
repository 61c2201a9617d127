/**
 * `audit verify`: runs the audit CLI, `operator/src/cli/gatehouse-audit.ts verify`, with the same
 * Node, the plugin's connection flags and its own flags — the CLI is reused whole (its checks, its
 * report text and its exit codes), not copied. It reads DATABASE_URL from the environment.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const AUDIT_CLI = fileURLToPath(new URL("../gatehouse-audit.ts", import.meta.url));

/** What `audit verify` forwards. */
export interface AuditOptions {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** The operator's namespace, where ConfigMap gatehouse-audit-checkpoints is (the CLI's default: gatehouse-system). */
  namespace?: string | undefined;
  from?: string | undefined;
  json: boolean;
}

/** The audit CLI's arguments for `options`; the ConfigMap is always compared with (a namespace is always given). */
export function auditArguments(options: AuditOptions): string[] {
  return [
    "verify",
    ...(options.from !== undefined ? ["--from", options.from] : []),
    ...(options.json ? ["--json"] : []),
    ...(options.kubeconfig ? ["--kubeconfig", options.kubeconfig] : []),
    ...(options.context ? ["--context", options.context] : []),
    "--namespace",
    options.namespace || "gatehouse-system",
  ];
}

/** Runs the audit CLI with stdio inherited; resolves with its exit code. */
export function runAuditVerify(options: AuditOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [AUDIT_CLI, ...auditArguments(options)], { stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
