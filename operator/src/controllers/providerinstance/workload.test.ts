import { describe, expect, it } from "vitest";
import type { ProviderInstance } from "../../api/kinds.ts";
import { sidecarsFor } from "../agentsession/sidecars.ts";
import { deploymentFor } from "./workload.ts";

const provider = {
  apiVersion: "gatehouse.dev/v1alpha1",
  kind: "ProviderInstance",
  metadata: { name: "aps", namespace: "plant-a", uid: "u-1" },
  spec: {
    type: "aps",
    image: "gatehouse/provider-aps:dev",
    placement: "Shared",
    replicas: 1,
    config: { APS_URL: "http://aps.example", GATEHOUSE_JWKS_URL: "http://attacker.example/jwks" },
  },
} as unknown as ProviderInstance;

const envOf = (env: Array<{ name: string; value?: string }> | undefined) =>
  Object.fromEntries((env ?? []).map((e) => [e.name, e.value]));

describe("the grant environment of provider containers", () => {
  it("tells a Shared provider its audience and the gateway's JWKS, after (so over) spec.config", () => {
    const env = deploymentFor(provider, 8080, "http://gatehouse.gatehouse-system:8443/").spec?.template.spec
      ?.containers[0]?.env;
    expect(envOf(env)).toMatchObject({
      GATEHOUSE_GRANT_AUDIENCE: "plant-a/aps",
      GATEHOUSE_JWKS_URL: "http://gatehouse.gatehouse-system:8443/v1/grants/jwks",
    });
    expect(env?.map((e) => e.name).lastIndexOf("GATEHOUSE_JWKS_URL")).toBe((env?.length ?? 0) - 1);
  });

  it("tells a Sidecar provider the same, and the one session whose grants it admits", () => {
    const sidecar = { ...provider, spec: { ...provider.spec, placement: "Sidecar" } } as ProviderInstance;
    const { containers } = sidecarsFor([sidecar], "http://10.88.0.1:8443", "uid-of-session");
    expect(envOf(containers[0]?.env)).toMatchObject({
      GATEHOUSE_GRANT_AUDIENCE: "plant-a/aps",
      GATEHOUSE_JWKS_URL: "http://10.88.0.1:8443/v1/grants/jwks",
      GATEHOUSE_GRANT_SESSION: "uid-of-session",
    });
  });
});
