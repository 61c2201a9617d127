/**
 * The fault campaign in `make test`: a few fixed runs of the campaign (campaign.ts) on the shared
 * control plane, each a test case asserting zero invariant violations and printing the faults it
 * injected. The long campaign is `make chaos`; a failing run there replays with its seed and run here
 * or with `make chaos SEED=… RUN=…`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterInfo } from "../e2e/cluster-info.ts";
import { type CampaignStack, describeRun, startCampaignStack } from "./campaign.ts";
import { scheduleOf } from "./schedule.ts";

/** Chosen to cover a controller, a gateway and a Postgres fault with few calls each. */
const FIXED_RUNS: Array<{ seed: number; run: number }> = [
  { seed: 16, run: 0 },
  { seed: 19, run: 0 },
  { seed: 9, run: 0 },
];

let stack: CampaignStack;

beforeAll(async () => {
  stack = await startCampaignStack(clusterInfo());
}, 600_000);

afterAll(async () => {
  await stack?.stop();
});

describe("the fault campaign", () => {
  it.each(FIXED_RUNS)("keeps every invariant in run $run of seed $seed", async ({ seed, run }) => {
    const schedule = scheduleOf(seed, run);
    const lines = [describeRun(schedule)];
    const result = await stack.run(schedule, (line) => lines.push(line));
    console.log(lines.join("\n"));
    expect(result.error).toBeUndefined();
    expect(result.violations).toEqual([]);
  });
});
