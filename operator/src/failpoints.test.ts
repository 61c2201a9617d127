import { describe, expect, it } from "vitest";
import { declaredFailpoints, FAILPOINTS } from "./core/failpoints.ts";
// Loading both programs loads every module that declares a failpoint site.
import "./programs/controller.ts";
import "./programs/gateway.ts";

describe("the failpoint list", () => {
  it("has code reaching every listed point, and no site outside the list", () => {
    expect([...declaredFailpoints()].sort()).toEqual(Object.keys(FAILPOINTS).sort());
  });
});
