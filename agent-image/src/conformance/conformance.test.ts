/** The conformance suite for the engines that run in the agent's own process (suite.ts). */
import { engines } from "./engines.ts";
import { describeConformance } from "./suite.ts";

describeConformance(engines.filter((engine) => engine.runs === "in-process"));
