/**
 * The `aps` provider as `serveProvider` takes it: the manifest, the handlers, the status reader and the
 * target reader, all over one APS client. `main.ts` adds the listen address, logger and grant verifier;
 * tests add theirs, so what they run is what the image runs.
 */
import type { ServeProviderOptions } from "@gatehouse/provider-sdk/server";
import type { ApsClient } from "./aps-client.ts";
import { apsStatusOf, apsTargets } from "./aps-records.ts";
import { DEFAULT_APS_SERVICE_USER } from "./config.ts";
import { apsHandlers } from "./handlers.ts";
import { apsManifest } from "./manifest.ts";

/** The aps parts of `ServeProviderOptions`; `serviceUser` is the provider's own APS user. */
export function apsProvider(
  aps: ApsClient,
  serviceUser: string = DEFAULT_APS_SERVICE_USER,
): Pick<ServeProviderOptions, "manifest" | "handlers" | "statusOf" | "targets"> {
  return {
    manifest: apsManifest,
    handlers: apsHandlers(aps),
    statusOf: apsStatusOf(aps, serviceUser),
    targets: apsTargets(aps, serviceUser),
  };
}
