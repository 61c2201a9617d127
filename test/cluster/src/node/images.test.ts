import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../../agent-image/src/config.ts";
import { codexBinary } from "../../../../agent-image/src/engines/codex/package.ts";
import { piEntryPoint } from "../../../../agent-image/src/engines/pi/package.ts";
import { ENGINES } from "../../../../operator/src/api/agentsession.ts";
import { REPO_ROOT } from "../paths.ts";
import { containerArgv, NODE_COMPILE_CACHE, registerImage, resolveImage } from "./images.ts";

describe("images registered at run time", () => {
  const dirs: string[] = [];
  const runDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "images-"));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("runs a mapped image from the repo root and a registered one with its like's command from its code directory", () => {
    const dir = runDir();
    expect(resolveImage(dir, "gatehouse/operator:0.1.0")).toEqual({
      command: ["node", "--optimize-for-size", "operator/src/main.ts"],
      cwd: REPO_ROOT,
      env: { NODE_COMPILE_CACHE },
    });
    expect(resolveImage(dir, "gatehouse/operator:0.1.0-old")).toBeUndefined();
    registerImage(dir, "gatehouse/operator:0.1.0-old", {
      like: "gatehouse/operator:0.1.0",
      codeDir: "/src/old",
    });
    registerImage(dir, "gatehouse/agent:old", { like: "gatehouse/agent:dev", codeDir: "/src/old" });
    const old = resolveImage(dir, "gatehouse/operator:0.1.0-old");
    expect(old).toEqual({
      command: ["node", "--optimize-for-size", "operator/src/main.ts"],
      cwd: "/src/old",
      env: { NODE_COMPILE_CACHE },
    });
    expect(resolveImage(dir, "gatehouse/agent:old")?.command).toEqual(["node", "agent-image/src/main.ts"]);
    // Another node's run directory knows nothing of it.
    expect(resolveImage(runDir(), "gatehouse/operator:0.1.0-old")).toBeUndefined();
    expect(
      containerArgv(
        { image: "gatehouse/operator:0.1.0-old", args: ["migrate"] },
        {},
        "/usr/bin/node",
        old?.command,
      ),
    ).toEqual(["/usr/bin/node", "--optimize-for-size", "operator/src/main.ts", "migrate"]);
  });

  it("refuses to register an image like one the node does not know, naming the map", () => {
    expect(() =>
      registerImage(runDir(), "gatehouse/operator:old", {
        like: "gatehouse/nothing:dev",
        codeDir: "/src/old",
      }),
    ).toThrow(/image "gatehouse\/nothing:dev" is not in the local node's image map/);
  });
});

describe("the agent image on the local node", () => {
  it("runs every engine spec.engine allows: the agent's configuration takes each, and Pi's entry point and Codex's binary resolve beside the mapped program", () => {
    for (const engine of ENGINES) {
      expect(
        loadConfig({ GATEHOUSE_ENGINE: engine, GATEHOUSE_GATEWAY_URL: "http://10.88.0.1:8443" }).engine,
      ).toBe(engine);
    }
    // The agent runs from the repo root (IMAGE_COMMANDS), and finds Pi as Node finds packages from its
    // own folder: the workspace's node_modules.
    const agent = resolveImage(join(tmpdir(), "no-run-dir"), "gatehouse/agent:dev");
    expect(agent).toEqual({
      command: ["node", "agent-image/src/main.ts"],
      cwd: REPO_ROOT,
      env: { NODE_COMPILE_CACHE },
    });
    expect(existsSync(piEntryPoint())).toBe(true);
    expect(piEntryPoint().startsWith(REPO_ROOT)).toBe(true);
    expect(existsSync(codexBinary())).toBe(true);
    expect(codexBinary().startsWith(REPO_ROOT)).toBe(true);
  });
});
