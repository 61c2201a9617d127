import { startFakeErp } from "@gatehouse/fakes/erp";
import { grantVerifierFromEnvironment } from "@gatehouse/provider-sdk";
import { describeProviderContract } from "@gatehouse/provider-sdk/contract-kit";
import { serveProvider } from "@gatehouse/provider-sdk/server";
import { pino } from "pino";
import { createErpClient } from "./erp-client.ts";
import { erpHandlers } from "./handlers.ts";
import { erpHealth } from "./health.ts";
import { erpManifest } from "./manifest.ts";

describeProviderContract({
  name: "erp against the fake ERP",
  start: async (grants) => {
    const erp = await startFakeErp({ host: "127.0.0.1", port: 0 });
    const client = createErpClient(erp.url);
    const provider = await serveProvider({
      manifest: erpManifest,
      handlers: erpHandlers(client),
      health: erpHealth(client),
      host: "127.0.0.1",
      port: 0,
      logger: pino({ level: "silent" }),
      verifyGrant: grantVerifierFromEnvironment(grants.environment),
    });
    return {
      url: provider.url,
      stop: async () => {
        await provider.close();
        await erp.close();
      },
    };
  },
  examples: {
    "erp.material.stock": { arguments: { materialId: "bracket-a", plant: "plant-a" } },
    "erp.material-master.read": { arguments: { materialId: "steel-coil-2mm" } },
  },
});
