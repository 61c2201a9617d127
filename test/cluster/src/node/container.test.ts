import { describe, expect, it } from "vitest";
import { ContainerRunner } from "./container.ts";

describe("ContainerRunner.terminateUnstarted", () => {
  it("reports a never-started container of a terminal pod terminated with ContainerStatusUnknown, as the kubelet does", () => {
    const runner = new ContainerRunner("app", "testbox", "main", () => {});
    runner.wait("ContainerCreating");
    const at = new Date("2026-12-02T10:00:00Z");
    runner.terminateUnstarted(at);
    expect(runner.state).toMatchObject({
      kind: "terminated",
      exitCode: 137,
      reason: "ContainerStatusUnknown",
      finishedAt: at,
    });
    expect(runner.restartCount).toBe(0);
  });

  it("keeps a real termination", () => {
    const runner = new ContainerRunner("app", "testbox", "main", () => {});
    const exited = {
      kind: "terminated" as const,
      exitCode: 3,
      reason: "Error",
      startedAt: new Date(1),
      finishedAt: new Date(2),
      containerID: "localnode://1",
    };
    runner.state = exited;
    runner.terminateUnstarted(new Date(3));
    expect(runner.state).toBe(exited);
  });
});
