/**
 * `audit verify`, `audit show` and `audit lifecycle`: run the audit CLI, `operator/src/cli/gatehouse-audit.ts`, with the
 * same Node and the plugin's flags turned into its own — the CLI is reused whole (its checks, its
 * text and its exit codes), not copied. It reads DATABASE_URL from the environment.
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
  /** Witness key ids to trust (`--trust-kid`), not the keys the ConfigMap lists. */
  trustKids?: string[] | undefined;
}

/** What `audit show` forwards. */
export interface AuditShowOptions {
  /** The Approval's name (`apr-<20 hex>`). */
  name: string;
  /** The Approval's namespace; without it, every namespace's Approval of that name. */
  namespace?: string | undefined;
  output: "text" | "json";
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
    // `=`: a key id may begin with "-", which would otherwise read as an option.
    ...(options.trustKids ?? []).map((kid) => `--trust-kid=${kid}`),
  ];
}

/** The audit CLI's arguments for `audit show`. */
export function auditShowArguments(options: AuditShowOptions): string[] {
  return [
    "show",
    "--approval",
    options.name,
    ...(options.namespace ? ["--namespace", options.namespace] : []),
    ...(options.output === "json" ? ["--json"] : []),
  ];
}

/** Runs `gatehouse-audit verify` with stdio inherited; resolves with its exit code. */
export function runAuditVerify(options: AuditOptions): Promise<number> {
  return runAuditCli(auditArguments(options));
}

/** Runs `gatehouse-audit show` with stdio inherited; resolves with its exit code (0 printed, 1 not found, 2 error). */
export function runAuditShow(options: AuditShowOptions): Promise<number> {
  return runAuditCli(auditShowArguments(options));
}

/** The audit CLI's arguments for `audit lifecycle`: the API server is the kubeconfig's. */
export function auditLifecycleArguments(options: {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  json: boolean;
}): string[] {
  return [
    "lifecycle",
    ...(options.json ? ["--json"] : []),
    ...(options.kubeconfig ? ["--kubeconfig", options.kubeconfig] : []),
    ...(options.context ? ["--context", options.context] : []),
  ];
}

/** Runs `gatehouse-audit lifecycle` with stdio inherited; resolves with its exit code (0 none lost, 1 lost ends, 2 error). */
export function runAuditLifecycle(options: Parameters<typeof auditLifecycleArguments>[0]): Promise<number> {
  return runAuditCli(auditLifecycleArguments(options));
}

function runAuditCli(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [AUDIT_CLI, ...args], { stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
