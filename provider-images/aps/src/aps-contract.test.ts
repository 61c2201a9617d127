import { type FakeAps, startFakeAps } from "@gatehouse/fakes/aps";
import { grantVerifierFromEnvironment } from "@gatehouse/provider-sdk";
import { describeProviderContract } from "@gatehouse/provider-sdk/contract-kit";
import { serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { createApsClient } from "./aps-client.ts";
import { apsProvider } from "./aps-provider.ts";

let aps: FakeAps;
// aps requires identity: every example acts as alice's bound APS account.
const alice = { subject: { user: "alice", groups: [] }, account: "alice" };

describeProviderContract({
  name: "aps against the fake APS",
  start: async (grants) => {
    aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
    const provider = await serveProvider({
      ...apsProvider(createApsClient(aps.url)),
      host: "127.0.0.1",
      port: 0,
      logger: pino({ level: "silent" }),
      verifyGrant: grantVerifierFromEnvironment(grants.environment),
    });
    return {
      url: provider.url,
      stop: async () => {
        await provider.close();
        await aps.close();
      },
    };
  },
  examples: {
    "aps.schedule.read": { arguments: { planId: "plan-2026-w49" }, ...alice },
    "aps.schedule.draft": { arguments: { planId: "plan-2026-w49", shiftDays: 1 }, ...alice },
    "aps.schedule.publish": {
      // A publish needs a fresh draft of the currently published version, made in the APS itself; the
      // draft is the plan's newest version, so it is also the target version Core would re-check.
      arguments: async () => {
        const draft = await createApsClient(aps.url).createDraft("plan-2026-w49", 1, { user: "alice" });
        return { planId: draft.id, version: draft.version };
      },
      ...alice,
    },
  },
});
