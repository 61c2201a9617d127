/**
 * The provider contract-test kit (DESIGN §1 "provider author … runs its contract-test kit"). A provider's
 * test file calls `describeProviderContract(...)`; the kit registers one vitest test per check of
 * `contract-checks.ts` (see there for what is checked), all talking to the *running* provider over real
 * HTTP with grants signed by the kit's stand-in for the operator (`kit-grants.ts`). The grant checks
 * always run: a provider that skips grant verification cannot pass.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { ContractCheckSkipped, contractChecks } from "./contract-checks.ts";
import {
  type ContractSession,
  openContractSession,
  type ProviderContractOptions,
} from "./contract-session.ts";

export type { ContractExample, ProviderContractOptions, RunningProvider } from "./contract-session.ts";

/** Registers the contract tests of one provider (see the file comment). Call it at a test file's top level. */
export function describeProviderContract(options: ProviderContractOptions): void {
  describe(`provider contract: ${options.name}`, () => {
    let session: ContractSession | undefined;

    beforeAll(async () => {
      session = await openContractSession(options);
    });
    afterAll(async () => {
      await session?.close();
    });

    for (const check of contractChecks(options)) {
      it(check.name, async (context) => {
        try {
          await check.run(session!);
        } catch (error) {
          if (error instanceof ContractCheckSkipped) context.skip(error.message);
          throw error;
        }
      });
    }
  });
}
