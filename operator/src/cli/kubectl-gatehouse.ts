#!/usr/bin/env node
/**
 * `kubectl gatehouse` — the approver's kubectl plugin (DESIGN §1):
 *
 *   kubectl gatehouse pending [-A] [-o table|json]
 *   kubectl gatehouse approve NAME [--reason TEXT] [--wait SECONDS|false]
 *   kubectl gatehouse reject NAME --reason TEXT [--wait SECONDS|false]
 *   kubectl gatehouse resolve NAME --succeeded|--failed --reason TEXT [--wait SECONDS|false]
 *   kubectl gatehouse transcript SESSION [-o text|json]
 *   kubectl gatehouse audit verify [--from SEQ] [--json] [--trust-kid KID]…
 *   kubectl gatehouse audit show NAME [-n NS] [-o text|json]
 *   kubectl gatehouse audit lifecycle [--json]
 *   … [--kubeconfig FILE] [--context NAME] [-n NS] [-h]
 *
 * kubectl finds it on PATH as `kubectl-gatehouse` (bin/kubectl-gatehouse runs this file with the
 * repo's Node) and passes it only the arguments after `gatehouse` — never its own global flags, so
 * the connection flags are parsed here. The caller's identity is the API server's answer to a
 * SelfSubjectReview; no flag sets it. Each subcommand lives in plugin/.
 *
 * Exit codes: 0 done; 1 refused by the API server or the gateway (its message printed), an
 * approved call that did not run or did not succeed (Stale, Failed, Unknown, Expired, Cancelled;
 * plugin/decide.ts exitCodeOf), a broken audit chain, or no audit record naming the Approval asked
 * for; 2 usage error (the subcommand's usage printed) or a kubeconfig that cannot be used (which flag
 * or variable named it, and what to do). A closed stdout pipe (`… | head -2`) ends it quietly with 0.
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { ApprovalPhase } from "../api/status/approval.ts";
import { runAuditLifecycle, runAuditShow, runAuditVerify } from "./plugin/audit.ts";
import { connect, KubeconfigError } from "./plugin/connection.ts";
import { apiMessageOf, decide } from "./plugin/decide.ts";
import { endQuietlyWhenStdoutCloses, type Output, processOutput } from "./plugin/output.ts";
import { listPending } from "./plugin/pending.ts";
import { resolve } from "./plugin/resolve.ts";
import { printTranscript } from "./plugin/transcript.ts";
import { EXIT, UsageError, usageOf } from "./plugin/usage.ts";

const CONNECTION = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  namespace: { type: "string", short: "n" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsOptionsConfig;

const DECISION = { reason: { type: "string" }, wait: { type: "string" } } as const;

/** Each subcommand's own flags, besides the connection flags. */
const FLAGS = {
  pending: { "all-namespaces": { type: "boolean", short: "A" }, output: { type: "string", short: "o" } },
  approve: DECISION,
  reject: DECISION,
  resolve: { ...DECISION, succeeded: { type: "boolean" }, failed: { type: "boolean" } },
  transcript: { output: { type: "string", short: "o" } },
  audit: {
    from: { type: "string" },
    json: { type: "boolean" },
    output: { type: "string", short: "o" },
    "trust-kid": { type: "string", multiple: true },
  },
} as const satisfies Record<string, ParseArgsOptionsConfig>;

type Command = keyof typeof FLAGS;

function isCommand(word: string | undefined): word is Command {
  return word !== undefined && Object.hasOwn(FLAGS, word);
}

/** The subcommand: the first positional, found with every flag known so a flag's value is not taken for it. */
function commandOf(argv: string[]): string | undefined {
  const all = Object.assign({}, CONNECTION, ...Object.values(FLAGS)) as ParseArgsOptionsConfig;
  return parseArgs({ args: argv, options: all, allowPositionals: true, strict: false }).positionals[0];
}

function parseCommand<C extends Command>(command: C, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { ...CONNECTION, ...FLAGS[command] },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function positionalsExactly(positionals: string[], count: number, what: string): string[] {
  const rest = positionals.slice(1);
  if (rest.length < count) throw new UsageError(`missing ${what}`);
  if (rest.length > count) throw new UsageError(`unexpected argument ${JSON.stringify(rest[count])}`);
  return rest;
}

/** `--wait`: whole seconds, `true` (the default 30) or `false` (0: do not wait). */
function waitSecondsOf(text: string | undefined): number {
  if (text === undefined || text === "true") return 30;
  if (text === "false") return 0;
  if (!/^\d+$/.test(text))
    throw new UsageError(
      `--wait must be a whole number of seconds, true or false, not ${JSON.stringify(text)}`,
    );
  return Number(text);
}

function formatOf<F extends string>(text: string | undefined, formats: readonly F[]): F {
  if (text === undefined) return formats[0] as F;
  if (!(formats as readonly string[]).includes(text)) {
    throw new UsageError(`--output must be one of ${formats.join(", ")}, not ${JSON.stringify(text)}`);
  }
  return text as F;
}

/** Runs the plugin on `argv` (the arguments after `gatehouse`); resolves with the exit code. */
export async function runPlugin(argv: string[], env: NodeJS.ProcessEnv, output: Output): Promise<number> {
  let command: string | undefined;
  try {
    command = commandOf(argv);
    if (command === undefined || command === "help") {
      const topic = command === "help" ? argv[argv.indexOf("help") + 1] : undefined;
      const asked = argv.includes("--help") || argv.includes("-h") || command === "help";
      (asked ? output.out : output.err)(usageOf(topic));
      return asked ? EXIT.ok : EXIT.usage;
    }
    if (!isCommand(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    const { values, positionals } = parseCommand(command, argv);
    if (values.help) {
      output.out(usageOf(command));
      return EXIT.ok;
    }
    const connection = values as { kubeconfig?: string; context?: string; namespace?: string };
    const flags = {
      kubeconfig: connection.kubeconfig,
      context: connection.context,
      namespace: connection.namespace,
    };
    switch (command) {
      case "pending": {
        positionalsExactly(positionals, 0, "");
        const v = values as { "all-namespaces"?: boolean; output?: string };
        return await listPending(
          connect(flags, env),
          {
            allNamespaces: v["all-namespaces"] === true,
            output: formatOf(v.output, ["table", "json"] as const),
          },
          output,
        );
      }
      case "approve":
      case "reject": {
        const [name] = positionalsExactly(positionals, 1, "the Approval's NAME");
        const v = values as { reason?: string; wait?: string };
        if (command === "reject" && !v.reason?.trim()) {
          throw new UsageError("reject needs --reason: the agent and the audit record are told why");
        }
        if ((v.reason ?? "").length > 1024) throw new UsageError("--reason may hold at most 1024 characters");
        return await decide(
          connect(flags, env),
          {
            name: name as string,
            verdict: command === "approve" ? "Approve" : "Reject",
            reason: v.reason,
            waitSeconds: waitSecondsOf(v.wait),
          },
          output,
        );
      }
      case "resolve": {
        const [name] = positionalsExactly(positionals, 1, "the Approval's NAME");
        const v = values as { reason?: string; wait?: string; succeeded?: boolean; failed?: boolean };
        if (v.succeeded === v.failed) {
          throw new UsageError("resolve needs exactly one of --succeeded and --failed: what you found");
        }
        if (!v.reason?.trim()) {
          throw new UsageError(
            "resolve needs --reason: what you checked, for the audit record and the agent",
          );
        }
        if (v.reason.length > 1024) throw new UsageError("--reason may hold at most 1024 characters");
        return await resolve(
          connect(flags, env),
          {
            name: name as string,
            outcome: v.succeeded ? ApprovalPhase.Succeeded : ApprovalPhase.Failed,
            reason: v.reason,
            waitSeconds: waitSecondsOf(v.wait),
          },
          output,
        );
      }
      case "transcript": {
        const [session] = positionalsExactly(positionals, 1, "the AgentSession's name");
        const v = values as { output?: string };
        return await printTranscript(
          connect(flags, env),
          {
            session: session as string,
            output: formatOf(v.output, ["text", "json"] as const),
          },
          output,
        );
      }
      case "audit": {
        const sub = positionals[1];
        const v = values as { from?: string; json?: boolean; output?: string; "trust-kid"?: string[] };
        if (sub === "show") {
          const [, name] = positionalsExactly(positionals, 2, "the Approval's NAME");
          const foreign = [
            ...(v.from !== undefined ? ["--from"] : []),
            ...(v.json !== undefined ? ["--json (use -o json)"] : []),
            ...(v["trust-kid"] !== undefined ? ["--trust-kid"] : []),
            ...(flags.kubeconfig !== undefined ? ["--kubeconfig"] : []),
            ...(flags.context !== undefined ? ["--context"] : []),
          ];
          if (foreign.length > 0) {
            throw new UsageError(`audit show reads only DATABASE_URL; it takes no ${foreign.join(", ")}`);
          }
          return await runAuditShow({
            name: name as string,
            namespace: flags.namespace,
            output: formatOf(v.output, ["text", "json"] as const),
          });
        }
        if (sub === "lifecycle") {
          positionalsExactly(positionals, 1, "no more arguments");
          if (
            v.from !== undefined ||
            v.output !== undefined ||
            flags.namespace !== undefined ||
            v["trust-kid"] !== undefined
          ) {
            throw new UsageError("audit lifecycle takes only --json and the kubeconfig flags");
          }
          return await runAuditLifecycle({ ...flags, json: v.json === true });
        }
        const [only] = positionalsExactly(positionals, 1, "the audit command (verify, show or lifecycle)");
        if (only !== "verify") throw new UsageError(`unknown audit command ${JSON.stringify(only)}`);
        if (v.output !== undefined) throw new UsageError("audit verify takes --json, not -o");
        return await runAuditVerify({
          ...flags,
          from: v.from,
          json: v.json === true,
          trustKids: v["trust-kid"],
        });
      }
    }
  } catch (error) {
    if (error instanceof UsageError) {
      output.err(
        `kubectl-gatehouse: ${error.message}\n\n${usageOf(isCommand(command) ? command : undefined)}`,
      );
      return EXIT.usage;
    }
    if (error instanceof KubeconfigError) {
      output.err(`kubectl-gatehouse: ${error.message}`);
      return EXIT.usage;
    }
    output.err(`kubectl-gatehouse: ${apiMessageOf(error)}`);
    return EXIT.refused;
  }
}

if (import.meta.main) {
  endQuietlyWhenStdoutCloses();
  process.exitCode = await runPlugin(process.argv.slice(2), process.env, processOutput);
}
