/**
 * The fake APS's state file: one JSON document (plans with every version, publishes, keyed operations
 * with their answers), parsed with zod when read. Written to a temporary file and renamed over the old
 * one (rename is atomic on POSIX file systems), so a crash mid-write leaves the previous state whole.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";

const PlanLine = z.object({
  lineId: z.string(),
  resource: z.string(),
  product: z.string(),
  quantity: z.number(),
  start: z.string(),
  end: z.string(),
});

const PlanVersion = z.object({
  id: z.string(),
  week: z.string(),
  version: z.number().int(),
  status: z.enum(["published", "draft", "superseded"]),
  basedOnVersion: z.number().int().nullable(),
  createdBy: z.string(),
  lines: z.array(PlanLine),
});

/** The whole persisted state. */
export const ApsSnapshot = z.object({
  plans: z.array(
    z.object({
      id: z.string(),
      week: z.string(),
      publishedVersion: z.number().int(),
      versions: z.array(PlanVersion),
    }),
  ),
  publishes: z.array(
    z.object({
      publicationId: z.string(),
      planId: z.string(),
      version: z.number().int(),
      user: z.string(),
      idempotencyKey: z.string(),
      publishedAt: z.string(),
    }),
  ),
  operations: z.array(
    z.object({
      idempotencyKey: z.string(),
      operation: z.enum(["draft", "publish"]),
      planId: z.string(),
      user: z.string().nullable(),
      recordedAt: z.string(),
      statusCode: z.number().int(),
      body: z.unknown(),
      fingerprint: z.string(),
    }),
  ),
});
export type ApsSnapshot = z.infer<typeof ApsSnapshot>;

/** The snapshot in `path`, or undefined when the file does not exist. Throws on a malformed file. */
export function loadSnapshot(path: string): ApsSnapshot | undefined {
  if (!existsSync(path)) return undefined;
  const parsed = ApsSnapshot.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) {
    throw new Error(`fake APS state file ${path} is malformed:\n${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** Writes `snapshot` to `path` atomically (temporary file + rename), creating the directory. */
export function saveSnapshot(path: string, snapshot: ApsSnapshot): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(snapshot, null, 2)}\n`);
  renameSync(temporary, path);
}
