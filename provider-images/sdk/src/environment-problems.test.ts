import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  EnvironmentError,
  environmentProblems,
  parseEnvironment,
  setOnProviderInstance,
} from "./environment-problems.ts";
import { ServerEnvironment } from "./server-environment.ts";

const Config = ServerEnvironment.extend({
  ERP_URL: z.url().describe("the URL of the ERP system (required)"),
  ERP_TOKEN: z.string().min(8).describe("the ERP's API token"),
});

function problemsOf(env: Record<string, string | undefined>): string[] {
  const parsed = Config.safeParse(env);
  if (parsed.success) throw new Error("expected the environment to be refused");
  return environmentProblems(parsed.error, Config, env, setOnProviderInstance);
}

describe("environment problems", () => {
  it("names a missing required variable, where to set it and what it is, in one line", () => {
    expect(problemsOf({ ERP_TOKEN: "long enough" })).toEqual([
      "ERP_URL is required: set spec.config.ERP_URL on the ProviderInstance (the URL of the ERP system)",
    ]);
  });

  it("counts an empty variable as missing", () => {
    expect(problemsOf({ ERP_URL: "", ERP_TOKEN: "long enough" })).toEqual([
      "ERP_URL is required: set spec.config.ERP_URL on the ProviderInstance (the URL of the ERP system)",
    ]);
  });

  it("gives zod's reason for a bad value, never the value itself", () => {
    const problems = problemsOf({ ERP_URL: "http://erp", ERP_TOKEN: "s3cr3t", PORT: "eighty" });
    expect(problems).toEqual([
      "PORT is invalid (Invalid input: expected number, received NaN): set spec.config.PORT on the ProviderInstance (listen port)",
      "ERP_TOKEN is invalid (Too small: expected string to have >=8 characters): set spec.config.ERP_TOKEN on the ProviderInstance (the ERP's API token)",
    ]);
    expect(problems.join("\n")).not.toContain("s3cr3t");
  });

  it("lists every bad variable, one line each", () => {
    expect(problemsOf({ LOG_LEVEL: "loud" }).map((line) => line.split(" ")[0])).toEqual([
      "LOG_LEVEL",
      "ERP_URL",
      "ERP_TOKEN",
    ]);
  });
});

describe("parseEnvironment", () => {
  it("returns the parsed values with their defaults", () => {
    expect(
      parseEnvironment(Config, { ERP_URL: "http://erp", ERP_TOKEN: "long enough" }, setOnProviderInstance),
    ).toEqual({
      HOST: "0.0.0.0",
      PORT: 8080,
      LOG_LEVEL: "info",
      ERP_URL: "http://erp",
      ERP_TOKEN: "long enough",
    });
  });

  it("throws an EnvironmentError whose message is the problem lines and whose cause is zod's error", () => {
    let thrown: unknown;
    try {
      parseEnvironment(Config, {}, (name) => `export ${name}`);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(EnvironmentError);
    const error = thrown as EnvironmentError;
    expect(error.problems).toEqual([
      "ERP_URL is required: export ERP_URL (the URL of the ERP system)",
      "ERP_TOKEN is required: export ERP_TOKEN (the ERP's API token)",
    ]);
    expect(error.message).toBe(error.problems.join("\n"));
    expect(error.cause).toBeInstanceOf(z.ZodError);
  });
});
