import type { Manifest } from "@gatehouse/provider-sdk";
import { describe, expect, it } from "vitest";
import { manifestsWithGrace } from "./manifest-grace.ts";

const manifest = (version: string) =>
  ({ provider: "aps", version, requiresIdentity: true, capabilities: [] }) as unknown as Manifest;

/** A source that answers from `answers` in order: a Manifest, or an Error to throw. */
function scripted(answers: Array<Manifest | Error>) {
  const calls: string[] = [];
  return {
    calls,
    source: {
      async fetchManifest(endpoint: string) {
        calls.push(endpoint);
        const next = answers.shift();
        if (!next || next instanceof Error) throw next ?? new Error("no answer scripted");
        return next;
      },
    },
  };
}

describe("manifestsWithGrace", () => {
  it("stands in the last good manifest for a failure shorter than the grace, then throws", async () => {
    const clock = { ms: 0 };
    const stale: number[] = [];
    const timeout = new Error("The operation was aborted due to timeout");
    const { source } = scripted([manifest("1"), timeout, timeout, timeout]);
    const manifests = manifestsWithGrace(source, {
      graceMs: 20_000,
      now: () => clock.ms,
      onStale: (_endpoint, _error, forMs) => stale.push(forMs),
    });
    expect((await manifests.fetchManifest("http://a")).version).toBe("1");
    clock.ms = 30_000;
    expect((await manifests.fetchManifest("http://a")).version).toBe("1");
    clock.ms = 45_000;
    expect((await manifests.fetchManifest("http://a")).version).toBe("1");
    clock.ms = 50_000;
    await expect(manifests.fetchManifest("http://a")).rejects.toBe(timeout);
    expect(stale).toEqual([0, 15_000]);
  });

  it("starts the streak again after a success", async () => {
    const clock = { ms: 0 };
    const down = new Error("down");
    const { source } = scripted([manifest("1"), down, manifest("2"), down]);
    const manifests = manifestsWithGrace(source, { graceMs: 20_000, now: () => clock.ms });
    await manifests.fetchManifest("http://a");
    await manifests.fetchManifest("http://a");
    clock.ms = 25_000;
    expect((await manifests.fetchManifest("http://a")).version).toBe("2");
    clock.ms = 30_000;
    expect((await manifests.fetchManifest("http://a")).version).toBe("2");
  });

  it("never invents a manifest: an endpoint that never answered, or another endpoint, gets the error", async () => {
    const refused = new Error("ECONNREFUSED");
    const { source } = scripted([refused, manifest("1"), refused]);
    const manifests = manifestsWithGrace(source, { now: () => 0 });
    await expect(manifests.fetchManifest("http://a")).rejects.toBe(refused);
    await manifests.fetchManifest("http://a");
    await expect(manifests.fetchManifest("http://b")).rejects.toBe(refused);
  });
});
