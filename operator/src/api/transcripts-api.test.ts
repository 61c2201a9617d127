import { describe, expect, it } from "vitest";
import { continueToken, parseContinueToken, TranscriptQuery, transcriptPath } from "./transcripts-api.ts";

describe("the continue token", () => {
  it("carries the session's uid and the last seq served", () => {
    expect(parseContinueToken(continueToken("uid-1", 1000))).toEqual({ uid: "uid-1", after: 1000 });
  });

  it.each([
    "",
    "not base64 json",
    Buffer.from('{"uid":"u"}').toString("base64url"),
    Buffer.from('{"uid":"u","after":-1}').toString("base64url"),
  ])("is undefined for %j", (token) => {
    expect(parseContinueToken(token)).toBeUndefined();
  });
});

describe("TranscriptQuery", () => {
  it("defaults to a full page and refuses more than 1000 events or fewer than 1", () => {
    expect(TranscriptQuery.parse({})).toEqual({ limit: 1000 });
    expect(TranscriptQuery.parse({ limit: "3", continue: "x" })).toEqual({ limit: 3, continue: "x" });
    expect(TranscriptQuery.safeParse({ limit: "1001" }).success).toBe(false);
    expect(TranscriptQuery.safeParse({ limit: "0" }).success).toBe(false);
  });
});

it("transcriptPath escapes the names it is given", () => {
  expect(transcriptPath("plant-a", "s/x")).toBe(
    "/apis/transcripts.gatehouse.dev/v1alpha1/namespaces/plant-a/agentsessiontranscripts/s%2Fx",
  );
});
