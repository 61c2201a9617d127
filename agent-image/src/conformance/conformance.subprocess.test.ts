/**
 * The conformance suite for the engines that run as a child process of the agent (suite.ts): the real
 * binaries start here, so this file is in vitest project `engines`, not in `make unit`.
 */
import { engines } from "./engines.ts";
import { describeConformance } from "./suite.ts";

describeConformance(engines.filter((engine) => engine.runs === "subprocess"));
