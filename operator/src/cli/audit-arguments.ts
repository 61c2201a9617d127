/**
 * The command line of `gatehouse-audit` (cli/gatehouse-audit.ts): its usage text, and its arguments
 * parsed into the command to run.
 */
import { parseArgs } from "node:util";
import { executionIdPrefixOf } from "../store/approval-records.ts";

export const USAGE = `usage: gatehouse-audit verify [--from SEQ] [--json] [--kubeconfig FILE] [--context NAME] [--namespace NS] [--witness-file FILE] [--trust-kid KID]…
       gatehouse-audit show --approval NAME [--namespace NS] [--json]
       gatehouse-audit lifecycle [--kubeconfig FILE] [--context NAME] [--json]
(all read DATABASE_URL)
  verify   recompute the audit chain and compare it with the checkpoints and their signatures;
           --namespace is the operator's (the ConfigMap gatehouse-audit-checkpoints there; default
           gatehouse-system); --witness-file reads a copy of that ConfigMap (kubectl get -o json);
           --trust-kid KID trusts only that witness key (repeatable), not the keys the ConfigMap lists
  show     print Approval NAME's history from the chain alone: request, decisions, outcome, execution;
           --namespace is the Approval's (default: every namespace with an Approval of that name)
  lifecycle  check that every Approval request has an end in the chain or a live Approval in the
           cluster, and that no approved call ran without a request (the kubeconfig defaults to
           $KUBECONFIG, else ~/.kube/config)`;

/** The operator's namespace when `--namespace` is not given (config.ts's default). */
const DEFAULT_NAMESPACE = "gatehouse-system";

/** Which kubeconfig and context to reach the API server with (defaults: $KUBECONFIG, its current context). */
export interface KubeconfigSource {
  kubeconfig?: string;
  context?: string;
}

/** `show`: which Approval, and how to print it. */
export interface ShowCommand {
  name: string;
  namespace?: string;
  json: boolean;
}

/** Where the ConfigMap's checkpoints are read from. */
export interface ConfigMapSource {
  kubeconfig?: string;
  context?: string;
  namespace: string;
}

/**
 * Parses `verify [--from SEQ] [--json] [--kubeconfig FILE] [--context NAME] [--namespace NS]` and
 * `show --approval NAME [--namespace NS] [--json]`. Errors: throws with a message for anything else.
 */
export function parseCommand(argv: string[]): {
  help: boolean;
  fromSeq: number;
  json: boolean;
  configMap?: ConfigMapSource;
  witnessFile?: string;
  /** `--trust-kid`: the witness key ids to trust, not whatever keys the ConfigMap lists. */
  trustKids?: string[];
  show?: ShowCommand;
  lifecycle?: KubeconfigSource;
} {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      from: { type: "string" },
      json: { type: "boolean", default: false },
      kubeconfig: { type: "string" },
      context: { type: "string" },
      namespace: { type: "string", short: "n" },
      approval: { type: "string" },
      "witness-file": { type: "string" },
      "trust-kid": { type: "string", multiple: true },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return { help: true, fromSeq: 1, json: false };
  const command = positionals[0];
  if (positionals.length !== 1 || (command !== "verify" && command !== "show" && command !== "lifecycle")) {
    throw new Error(
      positionals.length === 0 ? "missing command" : `unknown command ${positionals.join(" ")}`,
    );
  }
  if (command !== "verify" && values["witness-file"] !== undefined) {
    throw new Error(`--witness-file belongs to verify, not ${command}`);
  }
  if (command !== "verify" && values["trust-kid"] !== undefined) {
    throw new Error(`--trust-kid belongs to verify, not ${command}`);
  }
  if (command === "show") return { help: false, fromSeq: 1, json: values.json, show: showCommandOf(values) };
  if (command === "lifecycle") {
    const foreign = (["from", "approval", "namespace"] as const).find((flag) => values[flag] !== undefined);
    if (foreign)
      throw new Error(`--${foreign} belongs to ${foreign === "approval" ? "show" : "verify"}, not lifecycle`);
    const lifecycle: KubeconfigSource = {
      ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
      ...(values.context !== undefined ? { context: values.context } : {}),
    };
    return { help: false, fromSeq: 1, json: values.json, lifecycle };
  }
  if (values.approval !== undefined) throw new Error("--approval belongs to show, not verify");
  const fromSeq = values.from === undefined ? 1 : Number(values.from);
  if (!/^\d+$/.test(values.from ?? "1") || !Number.isSafeInteger(fromSeq) || fromSeq < 1) {
    throw new Error(`--from must be a positive integer, not ${JSON.stringify(values.from)}`);
  }
  const wantsConfigMap =
    values.kubeconfig !== undefined || values.context !== undefined || values.namespace !== undefined;
  const configMap: ConfigMapSource | undefined = wantsConfigMap
    ? {
        ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
        ...(values.context !== undefined ? { context: values.context } : {}),
        namespace: values.namespace || DEFAULT_NAMESPACE,
      }
    : undefined;
  const witnessFile = values["witness-file"];
  if (witnessFile !== undefined && configMap) {
    throw new Error(
      "--witness-file reads the ConfigMap from a file: give it or --kubeconfig/--context/--namespace, not both",
    );
  }
  if (witnessFile === "") throw new Error("--witness-file must name a file");
  const trustKids = values["trust-kid"];
  if (trustKids !== undefined && !configMap && witnessFile === undefined) {
    throw new Error(
      "--trust-kid checks the witness's signatures: give --kubeconfig/--context/--namespace or --witness-file too",
    );
  }
  const malformed = trustKids?.find((kid) => !/^[A-Za-z0-9_-]{43}$/.test(kid));
  if (malformed !== undefined) {
    throw new Error(
      `--trust-kid ${JSON.stringify(malformed)} is not a witness key id (43 base64url characters, as verify prints them)`,
    );
  }
  return {
    help: false,
    fromSeq,
    json: values.json,
    ...(configMap ? { configMap } : {}),
    ...(witnessFile !== undefined ? { witnessFile } : {}),
    ...(trustKids !== undefined ? { trustKids } : {}),
  };
}

/** `show`'s flags. Errors: throws for a missing or malformed `--approval` and for `verify`'s flags. */
function showCommandOf(values: {
  approval?: string | undefined;
  namespace?: string | undefined;
  json: boolean;
  from?: string | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
}): ShowCommand {
  const foreign = (["from", "kubeconfig", "context"] as const).find((flag) => values[flag] !== undefined);
  if (foreign) throw new Error(`--${foreign} belongs to verify, not show`);
  const name = values.approval;
  if (name === undefined || name === "") throw new Error("show needs --approval NAME");
  if (executionIdPrefixOf(name) === undefined) {
    throw new Error(
      `${JSON.stringify(name)} is not the name of an Approval Gatehouse creates: apr- and 20 hex digits (the first of its execution id)`,
    );
  }
  if (values.namespace === "") throw new Error("--namespace must not be empty");
  return {
    name,
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    json: values.json,
  };
}
