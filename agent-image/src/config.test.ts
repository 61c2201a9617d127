import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.ts";

const gateway = { GATEHOUSE_GATEWAY_URL: "http://10.88.0.1:8443/" };

describe("loadConfig", () => {
  it("calls the model through the gateway's proxy by default, with the pod's token as the bearer", () => {
    const config = loadConfig(gateway);
    expect(config.modelBaseUrl).toBe("http://10.88.0.1:8443/v1/model");
    expect(config.modelApiKey).toBeUndefined();
  });

  it("never sends a configured key to the gateway: there the bearer is the pod's token", () => {
    const config = loadConfig({
      ...gateway,
      MODEL_BASE_URL: "http://10.88.0.1:8443/v1/model",
      MODEL_API_KEY: "sk-x",
    });
    expect(config.modelApiKey).toBeUndefined();
  });

  it("sends another endpoint its key, or a placeholder — never the pod's token", () => {
    expect(
      loadConfig({ ...gateway, MODEL_BASE_URL: "http://10.88.0.1:18080/v1", MODEL_API_KEY: "sk-x" })
        .modelApiKey,
    ).toBe("sk-x");
    expect(loadConfig({ ...gateway, MODEL_BASE_URL: "http://10.88.0.1:18080/v1" }).modelApiKey).toBe(
      "no-key-configured",
    );
  });

  it("prefixes the token file with LOCAL_NODE_ROOT and reads the retry settings", () => {
    const config = loadConfig({
      ...gateway,
      LOCAL_NODE_ROOT: "/var/lib/node/pods/x",
      MODEL_MAX_RETRIES: "2",
      MODEL_MAX_RETRY_AFTER_SECONDS: "30",
    });
    expect(config.tokenFile).toBe("/var/lib/node/pods/x/var/run/secrets/gatehouse/token");
    expect(config.engineDir).toBe("/var/lib/node/pods/x/tmp/gatehouse-engine");
    expect(config).toMatchObject({ modelMaxRetries: 2, modelMaxRetryAfterSeconds: 30 });
  });

  it("runs the builtin engine unless GATEHOUSE_ENGINE names another, and refuses an unknown one", () => {
    expect(loadConfig(gateway).engine).toBe("builtin");
    expect(
      loadConfig({ ...gateway, GATEHOUSE_ENGINE: "pi", GATEHOUSE_ENGINE_DIR: "/scratch" }),
    ).toMatchObject({
      engine: "pi",
      engineDir: "/scratch",
    });
    expect(loadConfig({ ...gateway, GATEHOUSE_ENGINE: "codex" }).engine).toBe("codex");
    expect(() => loadConfig({ ...gateway, GATEHOUSE_ENGINE: "claude" })).toThrow(/GATEHOUSE_ENGINE/);
  });
});
