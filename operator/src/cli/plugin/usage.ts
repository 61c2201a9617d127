/**
 * The plugin's usage texts, one per subcommand, and the error that makes the plugin print one and
 * exit 2. Flags are parsed with node:util parseArgs (kubectl-gatehouse.ts); these are only the words.
 */

/** A usage error: the command line is wrong. Exit code 2 with the subcommand's usage. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Exit codes of the plugin. */
export const EXIT = { ok: 0, refused: 1, usage: 2 } as const;

const CONNECTION_FLAGS = `Connection flags (kubectl passes its own global flags to no plugin, so these are the plugin's):
      --kubeconfig FILE     kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME        kubeconfig context to use (default: the current context)
  -n, --namespace NS        namespace (default: the context's namespace, else default)
  -h, --help                this help`;

/** Usage of each subcommand, and of the plugin itself under "". */
export const USAGE: Record<string, string> = {
  "": `kubectl gatehouse — decide Gatehouse Approvals and read what sessions did.

Usage: kubectl gatehouse COMMAND [flags]

Commands:
  pending                  list the Pending Approvals you can see, and whether you may decide them
  approve NAME [--reason]  append your Approve decision to Approval NAME
  reject NAME --reason     append your Reject decision to Approval NAME (a reason is required)
  resolve NAME --succeeded|--failed --reason
                           settle the Unknown outcome of Approval NAME's execution, as you found it
  transcript SESSION       print the transcript of AgentSession SESSION (from Postgres, via the API server)
  audit verify             verify the audit chain (gatehouse-audit verify)
  audit show NAME          print Approval NAME's history from the audit chain (gatehouse-audit show)
  audit lifecycle          check that no Approval request lost its end (gatehouse-audit lifecycle)

You are whoever the API server says your credential is (kubectl auth whoami): the decision's approver
is that user, and no flag changes it. Admission checks every decision (crds/admission-policies.yaml).

${CONNECTION_FLAGS}

Run kubectl gatehouse COMMAND --help for a command's flags.`,

  pending: `Usage: kubectl gatehouse pending [-A] [-o table|json] [connection flags]

Lists the Approvals whose phase is Pending in the namespace (or every namespace with -A): the session
that proposed the call, the capability, who requested it, its age and expiry, the votes so far
(counted approvals / required), and YOU: whether you may decide it — RBAC (patch approvals there,
asked with a SelfSubjectAccessReview) and the Approval's own rules (listed approvers, one decision per
user, self-approval).

  -A, --all-namespaces      every namespace
  -o, --output FORMAT       table (default) or json

${CONNECTION_FLAGS}`,

  approve: `Usage: kubectl gatehouse approve NAME [--reason TEXT] [--wait SECONDS|false] [connection flags]

Appends {"approver": <you>, "verdict": "Approve"} to spec.decisions of Approval NAME with a JSON patch
guarded by a test of the decisions you read, then waits until the operator has settled it — Succeeded,
Failed, Unknown, Stale, Rejected, Expired or Cancelled, or still Pending for more approvals — and
prints that phase with the reason and message of its Executed condition (else its Decided one).

Exit codes: 0 Succeeded, or Pending for more approvals (also when --wait ends before it settles);
1 Stale, Failed, Unknown, Expired, Cancelled or Rejected (the call did not run or did not succeed), or
the API server refused the decision (its message printed: admission names the rule, e.g.
decision-approver); 2 usage or kubeconfig error. Asked again after your Approve is recorded, it
sends nothing: 0 with the recorded decision, the phase and the execution's state; 1 when what is
recorded in your name is a Reject, or did not count (the reason is printed).

      --reason TEXT         why (stored in the decision; at most 1024 characters)
      --wait SECONDS        how long to wait for the settled phase (default 30; 0 or false: no wait)

${CONNECTION_FLAGS}`,

  reject: `Usage: kubectl gatehouse reject NAME --reason TEXT [--wait SECONDS|false] [connection flags]

Appends {"approver": <you>, "verdict": "Reject", "reason": TEXT} to spec.decisions of Approval NAME,
then waits until the operator has settled it and prints the phase. The agent is told "rejected by
<you>: TEXT". A requester may always reject their own call.

Exit codes: 0 Rejected (or not settled when --wait ends); 1 Stale, Failed, Unknown, Expired or
Cancelled, or the API server refused the decision (its message printed); 2 usage or kubeconfig error.

      --reason TEXT         why (required; at most 1024 characters)
      --wait SECONDS        how long to wait for the settled phase (default 30; 0 or false: no wait)

${CONNECTION_FLAGS}`,

  resolve: `Usage: kubectl gatehouse resolve NAME --succeeded|--failed --reason TEXT [--wait SECONDS|false] [connection flags]

When nobody knows whether a call took effect (Approval phase Unknown: a lost answer, a provider that
cannot deduplicate — also an Auto call, whose Approval the operator created with spec.autoExecution),
check the business system, then say what you found: appends {"resolver": <you>, "outcome":
"Succeeded"|"Failed", "reason": TEXT} to spec.resolutions of Approval NAME with a JSON patch guarded by
a test of the resolutions you read. The operator records it on the execution (audit record
execution.resolved in your name), moves the Approval to Succeeded or Failed (condition reason
ResolvedByPerson) and tells the agent. Until then an identical proposal of the call is not sent.

Admission allows it only with the RBAC verb resolve on approvals (gatehouse-platform has it), only in
your own name, once, and only while the Approval is Unknown.

Exit codes: 0 settled as you said (or not settled when --wait ends); 1 refused by the API server (its
message printed: admission names the rule, e.g. resolution-verb), or settled otherwise first; 2 usage
or kubeconfig error.

      --succeeded           the call took effect in the business system
      --failed              the call did not take effect
      --reason TEXT         what you checked (required; at most 1024 characters)
      --wait SECONDS        how long to wait for the settled phase (default 30; 0 or false: no wait)

${CONNECTION_FLAGS}`,

  transcript: `Usage: kubectl gatehouse transcript SESSION [-o text|json] [connection flags]

Prints the transcript of AgentSession SESSION — tool calls, Core's results, approval outcomes, the
final answers — which lives in Postgres, never in etcd. (The user's messages are the session's
spec.messages: kubectl get ags SESSION -o jsonpath='{.spec.messages}'.) It is read through the API
server, as kubectl get --raw /apis/transcripts.gatehouse.dev/v1alpha1/namespaces/NS/agentsessiontranscripts/SESSION
reads it, page by page: RBAC verb get on agentsessiontranscripts (persona gatehouse-session-user)
reads the sessions whose subject you are, get with get-any (role gatehouse-transcript-reader) any.

  -o, --output FORMAT       text (default) or json

${CONNECTION_FLAGS}`,

  audit: `Usage: kubectl gatehouse audit verify [--from SEQ] [--json] [--trust-kid KID]… [--kubeconfig FILE] [--context NAME] [-n NS]
       kubectl gatehouse audit show NAME [-n NS] [-o text|json]
       kubectl gatehouse audit lifecycle [--json] [--kubeconfig FILE] [--context NAME]

All read the Postgres of $DATABASE_URL (SELECT on the audit tables; the operator role has it).

audit verify runs gatehouse-audit verify (operator/src/cli/gatehouse-audit.ts): recomputes the audit
chain, compares it with every checkpoint the witness keeps in ConfigMap gatehouse-audit-checkpoints
(read with your kubeconfig) and checks each one's signature against the keys published there; it names
the first checkpoint that disagrees, and entries written before signing show as unsigned (legacy).
Here -n is the operator's namespace (default gatehouse-system). Exit codes: 0 intact, 1 broken (a
failing signature included), 2 usage or read error.

      --from SEQ            start at sequence number SEQ
      --json                the whole report as JSON
      --trust-kid KID       trust only this witness key (repeatable), not the keys the ConfigMap
                            lists: note the kid verify prints once, from a reading you trust

audit show runs gatehouse-audit show: prints Approval NAME's whole history from the audit chain alone —
who requested it (arguments digest, target and version, approvers, expiry), each decision (approver,
verdict, reason, counted or why not), how it ended, and the execution (started, recovering, finished
with its state, receipt evidence and result digest), each line with its seq and time — also after the
session and the Approval are deleted. Here -n is the Approval's namespace (default: every namespace
with an Approval of that name, each headed by its namespace); no kubeconfig is read. Exit codes: 0
printed, 1 no audit record names the Approval, 2 usage or read error.

  -o, --output FORMAT       text (default) or json

audit lifecycle runs gatehouse-audit lifecycle: every Approval request after the lifecycle marker must
have its end in the chain, or its Approval must still be in the cluster (read with your kubeconfig;
needs get on approvals). Exit codes: 0 none lost, 1 some end lost (each named), 2 usage or read error.`,
};

/** The usage text of `command` (the plugin's own for an unknown one). */
export function usageOf(command: string | undefined): string {
  return USAGE[command ?? ""] ?? (USAGE[""] as string);
}
