import { type FakeAps, startFakeAps } from "@gatehouse/fakes/aps";
import { describeProviderContract } from "@gatehouse/provider-sdk/contract-kit";
import { serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { createApsClient } from "./aps-client.ts";
import { apsHandlers } from "./handlers.ts";
import { apsManifest } from "./manifest.ts";

let aps: FakeAps;

describeProviderContract({
  name: "aps against the fake APS",
  start: async () => {
    aps = await startFakeAps({ host: "127.0.0.1", port: 0 });
    const provider = await serveProvider({
      manifest: apsManifest,
      handlers: apsHandlers(createApsClient(aps.url)),
      host: "127.0.0.1",
      port: 0,
      logger: pino({ level: "silent" }),
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
    "aps.schedule.read": { arguments: { planId: "plan-2026-w49" } },
    "aps.schedule.draft": { arguments: { planId: "plan-2026-w49", shiftDays: 1 } },
    "aps.schedule.publish": {
      // A publish needs a fresh draft of the currently published version, made in the APS itself.
      arguments: async () => {
        const draft = await createApsClient(aps.url).createDraft("plan-2026-w49", 1, { user: "alice" });
        return { planId: draft.id, version: draft.version };
      },
    },
  },
});
