import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";

/** A static-token user of the API server (`--token-auth-file`). */
export type StaticUser = { name: string; groups: readonly string[] };

/**
 * The people of the reference story (DESIGN §1). The API server adds `system:authenticated` to every
 * authenticated user by itself.
 */
export const PERSONAS: readonly StaticUser[] = [
  { name: "admin", groups: ["system:masters"] },
  { name: "alice", groups: [] },
  { name: "bob", groups: ["planners"] },
  { name: "carol", groups: ["approvers"] },
];

/** Identities of the control-plane components; the bootstrap RBAC policy already binds these names. */
export const COMPONENTS: readonly StaticUser[] = [
  { name: "system:kube-controller-manager", groups: [] },
  { name: "system:kube-scheduler", groups: [] },
];

/**
 * Writes a `--token-auth-file` (CSV: token,user,uid[,"group1,group2"]) with a fresh random token per user
 * and returns the tokens by user name.
 */
export function writeTokenAuthFile(path: string, users: readonly StaticUser[]): Map<string, string> {
  const tokens = new Map<string, string>();
  const lines = users.map((user) => {
    const token = randomBytes(24).toString("hex");
    tokens.set(user.name, token);
    const groups = user.groups.length > 0 ? `,"${user.groups.join(",")}"` : "";
    return `${token},${user.name},${user.name}${groups}`;
  });
  writeFileSync(path, `${lines.join("\n")}\n`, { mode: 0o600 });
  return tokens;
}
