/**
 * Opaque fields round-trip: what the model produced and the engine cannot interpret — tool-call ids,
 * raw arguments strings, the text beside the calls — goes to the executor, into the platform's
 * transcript and back to the model from a resumed session byte for byte, for any such values
 * (fast-check). The contract carries no other provider data (see docs/engines.md).
 */
import fc from "fast-check";
import { expect } from "vitest";
import { conversationOf, type Harness, resume, run } from "../harness.ts";

/** Any string, lone surrogates included, but no `{{` (the scripted model fills templates there). */
const text = (options: { minLength?: number; maxLength: number }) =>
  fc.string({ unit: "binary", ...options }).filter((s) => !s.includes("{{"));

const argumentsObject = fc
  .dictionary(
    text({ maxLength: 12 }).filter((key) => key !== "__proto__"),
    fc.jsonValue({ maxDepth: 2 }),
    { maxKeys: 4 },
  )
  .filter((value) => !JSON.stringify(value).includes("{{"));

const answer = fc.record({
  say: fc.option(text({ minLength: 1, maxLength: 40 }), { nil: undefined }),
  calls: fc.uniqueArray(
    fc.record({ id: text({ minLength: 1, maxLength: 64 }), arguments: argumentsObject }),
    {
      minLength: 1,
      maxLength: 3,
      selector: (call) => call.id,
    },
  ),
});

export function opaqueCases(h: Harness): void {
  h.it(
    "round-trips tool-call ids, raw arguments and text through the transcript byte for byte",
    async () => {
      await fc.assert(
        fc.asyncProperty(answer, async ({ say, calls }) => {
          const expected = calls.map((call) => ({ id: call.id, arguments: JSON.stringify(call.arguments) }));
          const world = h.world([
            {
              ...(say === undefined ? {} : { say }),
              call: calls.map((c) => ({ tool: "plan_read", arguments: c.arguments, id: c.id })),
            },
            { wait: "previous", say: "Done." },
          ]);
          let results = 0;
          // The pod dies once every call has its result: only the transcript carries the answer on.
          const first = await run(world, world.session([]), "Read.", {
            stop: (e) => e.type === "tool_result" && ++results === calls.length,
          });
          const proposed = first.flatMap((e) =>
            e.type === "tool_call" ? [{ id: e.callId, arguments: e.arguments }] : [],
          );
          expect(proposed).toEqual(expected);
          expect(world.executor.invoked.map((c) => ({ id: c.callId, arguments: c.arguments }))).toEqual(
            expected,
          );
          expect(first.map((e) => (e.type === "text" ? e.delta : "")).join("")).toBe(say ?? "");

          const since = h.requests().length;
          await resume(world);
          const replayed = conversationOf(h.requests()[since]!);
          expect(replayed.calls.map((c) => ({ id: c.id, arguments: c.arguments }))).toEqual(expected);
          expect(replayed.results.map((r) => r.id)).toEqual(expected.map((c) => c.id));
          const assistant = replayed.messages.find((m) => m.role === "assistant");
          expect(assistant?.content ?? "").toBe(say ?? "");
        }),
        { numRuns: 30 },
      );
    },
    30_000,
  );
}
