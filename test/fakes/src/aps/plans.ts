/**
 * The fake APS's domain: production plans, their versions and lines, and the pure operations on them
 * (seed, shift by days). No HTTP here; `aps-state.ts` holds the mutable system and `server.ts` serves it.
 */

/** One scheduled run on a resource. Dates are ISO calendar dates (`YYYY-MM-DD`), end inclusive. */
export interface PlanLine {
  lineId: string;
  resource: string;
  product: string;
  quantity: number;
  start: string;
  end: string;
}

/** `published` is live on the shop floor; `draft` is an isolated copy; `superseded` was published once. */
export type PlanStatus = "published" | "draft" | "superseded";

/** One version of a plan as the API returns it. `basedOnVersion` is the version a draft was copied from. */
export interface PlanVersion {
  id: string;
  week: string;
  version: number;
  status: PlanStatus;
  basedOnVersion: number | null;
  createdBy: string;
  lines: PlanLine[];
}

/** A plan with every version it ever had; exactly one version is `published`. */
export interface Plan {
  id: string;
  week: string;
  publishedVersion: number;
  versions: Map<number, PlanVersion>;
}

/** The seed plan of the reference story (DESIGN §1): ISO week 49 of 2026 starts Monday 2026-11-30. */
export function seedPlans(): Plan[] {
  const published: PlanVersion = {
    id: "plan-2026-w49",
    week: "2026-W49",
    version: 1,
    status: "published",
    basedOnVersion: null,
    createdBy: "scheduler",
    lines: [
      {
        lineId: "L1",
        resource: "press-1",
        product: "bracket-a",
        quantity: 1200,
        start: "2026-11-30",
        end: "2026-12-01",
      },
      {
        lineId: "L2",
        resource: "press-2",
        product: "bracket-b",
        quantity: 800,
        start: "2026-12-01",
        end: "2026-12-02",
      },
      {
        lineId: "L3",
        resource: "weld-1",
        product: "frame-c",
        quantity: 300,
        start: "2026-12-02",
        end: "2026-12-04",
      },
    ],
  };
  return [
    { id: published.id, week: published.week, publishedVersion: 1, versions: new Map([[1, published]]) },
  ];
}

/** Adds `days` (may be negative) to an ISO calendar date, in UTC so no time zone moves the day. */
export function addDays(isoDate: string, days: number): string {
  const date = new Date(`${isoDate}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

/** A draft copy of `base` with every line moved by `shiftDays`; the copy shares no objects with `base`. */
export function shiftedDraft(
  base: PlanVersion,
  shiftDays: number,
  version: number,
  createdBy: string,
): PlanVersion {
  return {
    id: base.id,
    week: base.week,
    version,
    status: "draft",
    basedOnVersion: base.version,
    createdBy,
    lines: base.lines.map((line) => ({
      ...line,
      start: addDays(line.start, shiftDays),
      end: addDays(line.end, shiftDays),
    })),
  };
}

/** A deep copy, so callers (and JSON answers) never alias the system's state. */
export function copyVersion(version: PlanVersion): PlanVersion {
  return { ...version, lines: version.lines.map((line) => ({ ...line })) };
}
