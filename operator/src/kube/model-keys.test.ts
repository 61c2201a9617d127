import { ApiException, type CoreV1Api } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { isGatehouseError } from "../core/errors.ts";
import { secretModelKeys } from "./model-keys.ts";

/** A CoreV1Api that knows `secrets` (name → data, values as plain text) and counts reads. */
function fakeCore(secrets: Record<string, Record<string, string>>) {
  const reads: string[] = [];
  const core = {
    async readNamespacedSecret({ namespace, name }: { namespace: string; name: string }) {
      reads.push(`${namespace}/${name}`);
      const data = secrets[name];
      if (!data) throw new ApiException(404, "not found", JSON.stringify({ reason: "NotFound" }), {});
      return {
        data: Object.fromEntries(
          Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")]),
        ),
      };
    },
  } as unknown as CoreV1Api;
  return { core, reads, secrets };
}

describe("secretModelKeys", () => {
  it("reads the key from the operator's namespace, trimmed, and caches it for the ttl", async () => {
    const fake = fakeCore({ "model-key": { apiKey: "sk-one\n" } });
    let now = 0;
    const keys = secretModelKeys(fake.core, "gatehouse-system", 30_000, () => now);
    const ref = { name: "model-key", key: "apiKey" };
    expect(await keys.keyOf(ref)).toBe("sk-one");
    now = 29_999;
    fake.secrets["model-key"] = { apiKey: "sk-two" };
    expect(await keys.keyOf(ref)).toBe("sk-one");
    now = 30_000;
    expect(await keys.keyOf(ref)).toBe("sk-two");
    expect(fake.reads).toEqual(["gatehouse-system/model-key", "gatehouse-system/model-key"]);
  });

  it("is unavailable, naming the Secret, when it or its key is missing", async () => {
    const keys = secretModelKeys(fakeCore({ other: { apiKey: "" } }).core, "gatehouse-system");
    const missing = await keys.keyOf({ name: "model-key", key: "apiKey" }).catch((e: unknown) => e);
    expect(isGatehouseError(missing, "unavailable")).toBe(true);
    expect((missing as Error).message).toContain("gatehouse-system/model-key does not exist");
    const empty = await keys.keyOf({ name: "other", key: "apiKey" }).catch((e: unknown) => e);
    expect((empty as Error).message).toContain("has no value under apiKey");
  });
});
