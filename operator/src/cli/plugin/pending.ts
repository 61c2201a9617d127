/**
 * `pending [-A] [-o json]`: the Approvals whose phase is Pending, with who may decide them. RBAC is
 * asked per Approval (SelfSubjectAccessReview: patch approvals/NAME in its namespace); the Approval's
 * own rules are read from its spec (eligibility.ts).
 */
import { APPROVAL, type Approval, GROUP, VERSION } from "../../api/kinds.ts";
import { ApprovalPhase } from "../../api/status/approval.ts";
import { type Connection, type Me, mayI, whoAmI } from "./connection.ts";
import { type DecisionRight, decisionRightOf, rightText } from "./eligibility.ts";
import type { Output } from "./output.ts";
import { formatTable, humanDuration } from "./table.ts";
import { oneLine } from "./terminal-text.ts";

/** One row of `pending`, also its `-o json` item. */
export interface PendingItem {
  namespace: string;
  name: string;
  session: string;
  capability: string;
  arguments: string;
  requestedBy: string;
  createdAt: string;
  expiresAt: string;
  approvals: number;
  requiredApprovals: number;
  decisions: Approval["spec"]["decisions"];
  you: DecisionRight;
}

/** Options of {@link listPending}. */
export interface PendingOptions {
  allNamespaces: boolean;
  output: "table" | "json";
}

/** The Pending Approvals the caller can list, with the caller's decision right on each. */
export async function pendingItems(
  connection: Connection,
  allNamespaces: boolean,
  now: Date,
): Promise<{ me: Me; items: PendingItem[] }> {
  const me = await whoAmI(connection);
  const base = { group: GROUP, version: VERSION, plural: APPROVAL.plural };
  const list = (
    allNamespaces
      ? await connection.custom.listClusterCustomObject(base)
      : await connection.custom.listNamespacedCustomObject({ ...base, namespace: connection.namespace })
  ) as { items: Approval[] };
  const pending = list.items.filter(
    (a) => (a.status?.phase ?? ApprovalPhase.Pending) === ApprovalPhase.Pending,
  );
  const items = await Promise.all(
    pending.map(async (approval): Promise<PendingItem> => {
      const { namespace, name } = approval.metadata;
      const rbac = await mayI(connection, "patch", APPROVAL.plural, namespace, name);
      return {
        namespace,
        name,
        session: approval.spec.sessionRef.name,
        capability: approval.spec.capabilityId,
        arguments: approval.spec.arguments,
        requestedBy: approval.spec.requester.user,
        createdAt: String(approval.metadata.creationTimestamp ?? ""),
        expiresAt: approval.spec.expiresAt,
        approvals: approval.status?.approvals ?? 0,
        requiredApprovals: approval.spec.requiredApprovals,
        decisions: approval.spec.decisions,
        you: decisionRightOf(approval, me, rbac, now),
      };
    }),
  );
  items.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.createdAt.localeCompare(b.createdAt));
  return { me, items };
}

/** The table of `items`, kubectl-style (with NAMESPACE first under -A). */
export function pendingTable(items: PendingItem[], allNamespaces: boolean, now: Date): string {
  const headers = ["NAME", "SESSION", "CAPABILITY", "REQUESTED BY", "AGE", "EXPIRES", "VOTES", "YOU"];
  const rows = items.map((item) => {
    const expiresIn = Date.parse(item.expiresAt) - now.getTime();
    // Names an agent or a user chose: made harmless and kept on one line, so no cell forges a row.
    return [
      oneLine(item.name),
      oneLine(item.session),
      oneLine(item.capability),
      oneLine(item.requestedBy),
      humanDuration(now.getTime() - Date.parse(item.createdAt)),
      expiresIn > 0 ? `in ${humanDuration(expiresIn)}` : "expired",
      `${item.approvals}/${item.requiredApprovals}`,
      rightText(item.you),
    ];
  });
  return allNamespaces
    ? formatTable(
        ["NAMESPACE", ...headers],
        rows.map((row, i) => [items[i]?.namespace ?? "", ...row]),
      )
    : formatTable(headers, rows);
}

/** Prints the Pending Approvals; returns the exit code (0; API errors are thrown). */
export async function listPending(
  connection: Connection,
  options: PendingOptions,
  output: Output,
): Promise<number> {
  const now = new Date();
  const { me, items } = await pendingItems(connection, options.allNamespaces, now);
  if (options.output === "json") {
    output.out(JSON.stringify({ user: me.username, groups: me.groups, items }, null, 2));
  } else if (items.length === 0) {
    output.err(
      options.allNamespaces
        ? "No Pending Approvals found."
        : `No Pending Approvals found in ${connection.namespace} namespace.`,
    );
  } else {
    output.out(pendingTable(items, options.allNamespaces, now));
  }
  return 0;
}
