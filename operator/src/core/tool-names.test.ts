import { CAPABILITY_ID_PATTERN } from "@gatehouse/provider-sdk";
import { describe, expect, it } from "vitest";
import { capabilityIdOf, toolNameOf } from "./tool-names.ts";

// OpenAI function names (https://platform.openai.com/docs/api-reference/chat/create, tools[].function.name).
const OPENAI_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

describe("capability id ↔ tool name", () => {
  it("maps erp.create-order to the tool erp_create-order and back", () => {
    expect(toolNameOf("erp.create-order")).toBe("erp_create-order");
    expect(capabilityIdOf("erp_create-order")).toBe("erp.create-order");
  });

  it.each([
    ["aps.schedule.publish", "aps_schedule_publish"],
    ["erp.material-master.read", "erp_material-master_read"],
    ["a-b.c", "a-b_c"],
    ["a.b-c", "a_b-c"],
  ])("maps %s to %s and back, keeping hyphens", (id, tool) => {
    expect(CAPABILITY_ID_PATTERN.test(id)).toBe(true);
    expect(toolNameOf(id)).toBe(tool);
    expect(capabilityIdOf(tool)).toBe(id);
  });

  it("gives a 64-character id a tool name the model API accepts", () => {
    const id = `${"a".repeat(30)}.${"b-c".repeat(10)}b-c`;
    expect(id).toHaveLength(64);
    expect(CAPABILITY_ID_PATTERN.test(id)).toBe(true);
    expect(toolNameOf(id)).toMatch(OPENAI_TOOL_NAME);
  });
});
