/**
 * The controller's cached session (session-cache.ts) against the whole session: the session
 * reconciler's pass plans the same on both, whatever the messages and the agent's answers.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { AgentSession } from "../api/kinds.ts";
import { completed, pass, podOf, type Row, RUNNING, sessionOf } from "./agentsession/plan-fixtures.ts";
import { sessionForController } from "./session-cache.ts";

const withText = (session: AgentSession): AgentSession & KubernetesObject =>
  structuredClone({
    ...session,
    metadata: { ...session.metadata, managedFields: [{ manager: "kubectl", operation: "Update" }] },
    spec: { ...session.spec, instructions: "Plan the week; ask before publishing." },
  }) as AgentSession & KubernetesObject;

const SCENARIOS: Array<{ name: string; row: Omit<Row, "calls"> }> = [
  { name: "new", row: { name: "", session: sessionOf() } },
  {
    name: "running",
    row: { name: "", session: sessionOf({ status: RUNNING }), pod: (s) => podOf(s, "Running") },
  },
  {
    name: "answered, a message appended",
    row: {
      name: "",
      session: sessionOf({ status: RUNNING, messages: 3 }),
      record: { finalAnswers: 2 },
      pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    },
  },
  {
    name: "answered every message",
    row: {
      name: "",
      session: sessionOf({ status: RUNNING, messages: 2 }),
      record: { finalAnswers: 2 },
      pod: (s) => podOf(s, "Succeeded", { exitCode: 0 }),
    },
  },
  {
    name: "completed, then a message appended",
    row: {
      name: "",
      session: sessionOf({ status: completed(), messages: 2, generation: 2 }),
      record: { finalAnswers: 1 },
    },
  },
];

describe("the controller's cached session", () => {
  it.each(SCENARIOS)("plans a session's pass as the whole session does: $name", async ({ row }) => {
    const whole = withText(row.session);
    const cached = sessionForController(withText(row.session));
    const fromWhole = await pass({ ...row, session: whole, calls: [] });
    const fromCached = await pass({ ...row, session: cached, calls: [] });
    expect(fromWhole.error).toBeUndefined();
    expect(fromCached.writer.calls).toEqual(fromWhole.writer.calls);
    expect(fromCached.result).toEqual(fromWhole.result);
    expect(fromCached.lines).toEqual(fromWhole.lines);
  });

  it("keeps every field but managedFields, the instructions and the messages' text, and the messages' count", () => {
    const whole = withText(sessionOf({ status: RUNNING, messages: 3 }));
    const cached = sessionForController(withText(sessionOf({ status: RUNNING, messages: 3 })));
    expect(cached.spec.messages).toHaveLength(3);
    expect(JSON.stringify(cached)).not.toMatch(/message \d|Plan the week/);
    const { instructions: _instructions, messages: _messages, ...spec } = whole.spec;
    expect({ ...cached, spec: { ...cached.spec, messages: undefined } }).toEqual({
      ...whole,
      metadata: { ...whole.metadata, managedFields: undefined },
      spec: { ...spec, messages: undefined },
    });
  });
});
