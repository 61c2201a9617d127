import { describe, expect, it } from "vitest";
import { turnFailure } from "./errors.ts";

describe("a failed Codex turn as the run's error", () => {
  it.each([
    [{ responseTooManyFailedAttempts: { httpStatusCode: 503 } }, "unavailable", false],
    [{ responseStreamConnectionFailed: { httpStatusCode: 429 } }, "unavailable", false],
    [{ httpConnectionFailed: { httpStatusCode: 400 } }, "invalid_arguments", true],
    [{ httpConnectionFailed: { httpStatusCode: 401 } }, "forbidden", true],
    [{ httpConnectionFailed: { httpStatusCode: null } }, "unavailable", false],
    ["badRequest", "invalid_arguments", true],
    ["contextWindowExceeded", "invalid_arguments", true],
    ["unauthorized", "forbidden", true],
    ["serverOverloaded", "unavailable", false],
    ["other", "internal", false],
  ])("%j is %s (final: %s)", (info, kind, final) => {
    const event = turnFailure({ message: "stream failed", codexErrorInfo: info, additionalDetails: null });
    expect(event.kind).toBe(kind);
    expect(event.final === true).toBe(final);
  });

  it("ends a run the token budget refused as final, whatever the status", () => {
    const event = turnFailure({
      message: "unexpected status 400: token_budget_exceeded",
      codexErrorInfo: { httpConnectionFailed: { httpStatusCode: 400 } },
    });
    expect(event).toMatchObject({ kind: "limit_exceeded", final: true });
  });
});

describe("a request the endpoint refused, as Codex reports it (the body, no status)", () => {
  it.each([
    ["invalid_request_error", "invalid_arguments", true],
    ["authentication_error", "forbidden", true],
    ["not_found_error", "not_found", true],
    ["server_error", "unavailable", false],
  ])("an error of type %s is %s (final: %s)", (type, kind, final) => {
    const body = JSON.stringify({ error: { message: "no such step", type, param: null, code: null } });
    const event = turnFailure({ message: body, codexErrorInfo: "other" });
    expect(event).toMatchObject({
      kind,
      message: `model endpoint refused the request (${type}): no such step`,
    });
    expect(event.final === true).toBe(final);
  });
});

describe("a refused request with the status the relay saw", () => {
  it.each([
    [400, "invalid_arguments", true],
    [404, "not_found", true],
    [408, "invalid_arguments", true],
    [429, "unavailable", false],
    [503, "unavailable", false],
  ])("HTTP %i is %s (final: %s) and named", (status, kind, final) => {
    const body = JSON.stringify({ error: { message: "no such step", type: "invalid_request_error" } });
    const event = turnFailure({ message: body, codexErrorInfo: "other" }, status);
    expect(event).toMatchObject({
      kind,
      message: `model endpoint answered HTTP ${status}: ${"model endpoint refused the request (invalid_request_error): no such step"}`,
    });
    expect(event.final === true).toBe(final);
  });
});
