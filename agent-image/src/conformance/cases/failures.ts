/**
 * Cancellation and error classification. The contract's classification is the `error` event: `final:
 * true` when a new pod would meet the same failure; a retryable failure has no `final` and the kind
 * `unavailable` (run-agent.ts then exits for a new pod; only the final kinds it lists end the session).
 */
import { expect } from "vitest";
import { type Harness, resume, run } from "../harness.ts";
import { turnEnds } from "./conversation.ts";

const answer = (faults: unknown[] = []) => [{ say: "Answered.", faults }];

export function failureCases(h: Harness): void {
  h.it(
    "stops mid-turn at abort() while a call runs: aborted is the last event and the executor's signal fires",
    async () => {
      const world = h.world(
        [
          { call: [{ tool: "plan_read", arguments: { planId: "w49" }, id: "r" }] },
          { wait: "previous", say: "Read." },
        ],
        {
          plans: { plan_read: { hang: true } },
        },
      );
      const session = world.session([]);
      world.executor.onStall = () => session.abort();
      const started = Date.now();
      const events = await run(world, session, "Read the plan.");
      expect(events.at(-1)).toEqual({ type: "error", kind: "aborted", message: expect.any(String) });
      expect(events.some((e) => e.type === "turn_end" || e.type === "tool_result")).toBe(false);
      expect(world.executor.signals.at(-1)?.aborted).toBe(true);
      expect(world.executor.executions).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2_000);
    },
  );

  h.it(
    "stops at send's AbortSignal while it waits to ask the model again, without waiting out Retry-After",
    async () => {
      const world = h.world(answer([{ kind: "rate_limit", retryAfterSeconds: 30 }]));
      const stop = new AbortController();
      const started = Date.now();
      // Aborted 100 ms after the 429 went out: by then the engine has read it and waits to ask again.
      const watching = setInterval(() => {
        const limited = h.requests().find((request) => request.status === 429);
        if (limited && Date.now() - Date.parse(limited.time) >= 100) stop.abort();
      }, 5);
      try {
        const events = await run(world, world.session([]), "Hello.", { signal: stop.signal });
        expect(events.at(-1)).toMatchObject({ type: "error", kind: "aborted" });
        expect(events.some((e) => e.type === "turn_end")).toBe(false);
      } finally {
        clearInterval(watching);
      }
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(h.requests().map((request) => request.status)).toEqual([429]);
    },
  );

  h.it("classifies a model 4xx as final and does not ask again", async () => {
    // Step 0 waits for a tool result the first request cannot hold: HTTP 400 invalid_request_error.
    const world = h.world([{ wait: "previous", say: "Unreachable." }]);
    const events = await run(world, world.session([]), "Hello.");
    expect(events.at(-1)).toMatchObject({
      type: "error",
      final: true,
      message: expect.stringContaining("400"),
    });
    expect(h.requests().map((request) => request.status)).toEqual([400]);
  });

  h.it("retries a model 5xx and a 429 and goes on", async () => {
    const world = h.world(
      answer([
        { kind: "server_error", status: 503 },
        { kind: "rate_limit", retryAfterSeconds: 0 },
      ]),
    );
    const events = await run(world, world.session([]), "Hello.");
    expect(
      h
        .requests()
        .map((request) => request.status)
        .sort(),
    ).toEqual([200, 429, 503]);
    expect(h.requests().at(-1)?.status).toBe(200);
    expect(turnEnds(events)).toMatchObject([{ final: true, text: "Answered." }]);
  });

  h.it("ends a run whose model stays unavailable with a retryable error, not a final one", async () => {
    const world = h.world(answer([{ kind: "server_error", status: 502, times: 100 }]));
    const events = await run(world, world.session([]), "Hello.");
    const error = events.at(-1);
    expect(error).toMatchObject({ type: "error", kind: "unavailable" });
    expect(error).not.toHaveProperty("final");
    expect(h.requests().length).toBeGreaterThan(1);
  });

  h.it(
    "ends a run whose model endpoint cannot be reached with a retryable error, not a final one",
    async () => {
      const world = h.world(answer(), { unreachableModel: true });
      const events = await run(world, world.session([]), "Hello.");
      const error = events.at(-1);
      expect(error).toMatchObject({ type: "error", kind: "unavailable" });
      expect(error).not.toHaveProperty("final");
    },
  );

  h.it(
    "ends a run whose gateway is unavailable with a retryable error; a new session runs the call once",
    async () => {
      let down = true;
      const world = h.world(
        [
          { call: [{ tool: "plan_read", arguments: { planId: "w49" }, id: "r" }] },
          { wait: "previous", say: "Read." },
        ],
        {
          plans: {
            plan_read: (call) =>
              down
                ? { unavailable: "gateway unreachable: connect ECONNREFUSED" }
                : { ok: `read ${call.callId}` },
          },
        },
      );
      const events = await run(world, world.session([]), "Read the plan.");
      const error = events.at(-1);
      expect(error).toMatchObject({
        type: "error",
        kind: "unavailable",
        message: expect.stringContaining("gateway unreachable"),
      });
      expect(error).not.toHaveProperty("final");
      expect(world.executor.executions).toEqual([]);

      down = false;
      const again = await resume(world);
      expect(world.executor.executions.map((c) => c.callId)).toEqual(["r"]);
      expect(turnEnds(again).at(-1)).toMatchObject({ final: true, text: "Read." });
    },
  );
}
