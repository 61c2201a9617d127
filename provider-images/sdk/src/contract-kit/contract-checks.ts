/**
 * The checks of the provider contract kit, as plain data: a name (a sentence) and an async `run` against
 * a `ContractSession` that throws when the provider breaks the contract. `describeProviderContract`
 * registers each as a vitest test; `runProviderContract` runs them and reports outcomes (so a test can
 * prove that a broken provider fails them). What they check is what Core relies on (DESIGN §4, §5):
 *   - the manifest parses, ids are unique and match the id pattern, schemas compile strictly, the input
 *     is an object at the top and every array declares `items`; every capability has an example;
 *   - health answers with the contract's shape;
 *   - each example invoke succeeds and its result matches the capability's output schema;
 *   - a capability with `idempotency: key` gives the same receipt for a repeated key;
 *   - the execution status of a used key returns that receipt; an unused key is `not_found`;
 *   - a declared target answers the current version named by the example, 404 for an unknown object;
 *   - a provider that requires identity refuses a call without a business account (`failed/forbidden`);
 *   - an unoffered capability is a `failed/not_found` receipt; a body that is not JSON or not an
 *     InvokeRequest is a 400 `invalid_request`; an unknown route is a 404 `not_found`;
 *   - grants: invoke, status and target without a grant are 401 `unauthenticated`; a grant signed with a
 *     key the operator's JWKS lacks, for another audience, for another call (the body changed after
 *     signing), for another status key, or used a second time is 403 `forbidden`, even for a key whose
 *     receipt the provider remembers; an expired grant is refused (401 or 403).
 */
import { expect } from "vitest";
import { ExecutionStatus, Health, ProtocolError, Receipt, TargetVersion } from "../contract.ts";
import { strictSchemaCompiler } from "../schema-compiler.ts";
import type { ContractSession, ProviderContractOptions } from "./contract-session.ts";
import { capabilityIdProblems, exampleCoverageProblems, manifestSchemaProblems } from "./manifest-checks.ts";
import type { Answer } from "./provider-calls.ts";

/** One check of the kit. `run` throws (an assertion error) when the provider fails it. */
export interface ContractCheck {
  name: string;
  run(session: ContractSession): Promise<void>;
}

/** Thrown by a check that does not apply to this provider (e.g. an idempotency check on a read). */
export class ContractCheckSkipped extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ContractCheckSkipped";
  }
}

function notApplicable(reason: string): never {
  throw new ContractCheckSkipped(`not applicable: ${reason}`);
}

/** The receipt of a 200 answer; fails with the whole answer otherwise. */
function receiptOf(answer: Answer): Receipt {
  expect(answer.status, `invoke answered ${answer.status}: ${JSON.stringify(answer.body)}`).toBe(200);
  return Receipt.parse(answer.body);
}

/** The ProtocolError of a non-2xx answer with one of the expected statuses. */
function protocolErrorOf(answer: Answer, ...expectedStatuses: number[]): ProtocolError {
  expect(expectedStatuses, `answered ${answer.status}: ${JSON.stringify(answer.body)}`).toContain(
    answer.status,
  );
  const parsed = ProtocolError.safeParse(answer.body);
  expect(parsed.success, `not a ProtocolError: ${JSON.stringify(answer.body)}`).toBe(true);
  return parsed.data!;
}

/** Expects a 403 `forbidden` ProtocolError: a grant that does not admit the call. */
function expectForbidden(answer: Answer, what: string): void {
  expect(answer.status, `${what}: answered ${answer.status}: ${JSON.stringify(answer.body)}`).toBe(403);
  expect(protocolErrorOf(answer, 403).kind).toBe("forbidden");
}

function exampleChecks(id: string): ContractCheck[] {
  return [
    {
      name: `invokes ${id} with its example and the result matches its output schema`,
      async run(session) {
        const offer = session.offerOf(id);
        expect(offer, `${id} is not offered`).toBeDefined();
        const receipt = receiptOf(await session.invoke(await session.requestFor(id)));
        expect(receipt, JSON.stringify(receipt)).toMatchObject({ status: "succeeded" });
        const validate = strictSchemaCompiler().compile(offer!.outputSchema);
        expect(validate(receipt.result), JSON.stringify(validate.errors)).toBe(true);
      },
    },
    {
      name: `answers the execution status of a key used for ${id} with its receipt`,
      async run(session) {
        const request = await session.requestFor(id);
        const receipt = receiptOf(await session.invoke(request));
        const answer = await session.status(request.idempotencyKey);
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(ExecutionStatus.parse(answer.body)).toEqual({
          idempotencyKey: request.idempotencyKey,
          status: receipt.status,
          response: receipt,
        });
      },
    },
    {
      name: `returns the same receipt when ${id} is invoked twice with one key, if its idempotency is key`,
      async run(session) {
        const idempotency = session.offerOf(id)?.idempotency;
        if (idempotency !== "key")
          notApplicable(`${id} declares idempotency ${idempotency}, this is for "key"`);
        const request = await session.requestFor(id);
        const first = receiptOf(await session.invoke(request));
        const second = receiptOf(await session.invoke(request));
        expect(second).toEqual(first);
      },
    },
    {
      name: `answers the current version of the target of ${id} as its example names it, if it declares a target`,
      async run(session) {
        const target = session.offerOf(id)?.target;
        if (!target) notApplicable(`${id} declares no target`);
        const request = await session.requestFor(id);
        const objectId = String(request.arguments[target.idArgument]);
        const answer = await session.target(target.kind, objectId);
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(TargetVersion.parse(answer.body)).toEqual({
          kind: target.kind,
          id: objectId,
          version: String(request.arguments[target.versionArgument]),
        });
      },
    },
    {
      name: `refuses ${id} without a business account with a failed forbidden receipt, if the provider requires identity`,
      async run(session) {
        if (!session.manifest.requiresIdentity) notApplicable("the provider does not require identity");
        const receipt = receiptOf(await session.invoke(await session.requestFor(id, { account: null })));
        expect(receipt).toMatchObject({ status: "failed", errorKind: "forbidden" });
      },
    },
  ];
}

const manifestChecks: ContractCheck[] = [
  {
    name: "serves a manifest whose capability ids are unique and match the id pattern",
    async run(session) {
      expect(capabilityIdProblems(session.manifest)).toEqual([]);
    },
  },
  {
    name: "declares schemas that compile strictly, with an object input and items on every array",
    async run(session) {
      expect(manifestSchemaProblems(session.manifest)).toEqual([]);
    },
  },
  {
    name: "has an example for every offered capability",
    async run(session) {
      expect(exampleCoverageProblems(session.manifest, Object.keys(session.options.examples))).toEqual([]);
    },
  },
  {
    name: "answers health with a status of the contract",
    async run(session) {
      const answer = await session.getJson("/v1/health");
      expect(answer.status).toBe(200);
      expect(Health.safeParse(answer.body).success, JSON.stringify(answer.body)).toBe(true);
    },
  },
];

/** The kinds and ids of targets the manifest declares, one per kind. */
function declaredTargetKinds(session: ContractSession): string[] {
  return [
    ...new Set(session.manifest.capabilities.flatMap((offer) => (offer.target ? [offer.target.kind] : []))),
  ];
}

function protocolChecks(firstId: string): ContractCheck[] {
  return [
    {
      name: "answers an unoffered capability with a failed not_found receipt",
      async run(session) {
        const receipt = receiptOf(await session.invoke(session.plainRequest("contract-kit.never.offered")));
        expect(receipt).toMatchObject({ status: "failed", errorKind: "not_found" });
        expect(receipt.message).toContain("contract-kit.never.offered");
      },
    },
    {
      name: "refuses a body that is not JSON with 400 invalid_request",
      async run(session) {
        const request = session.plainRequest(firstId);
        const truncated = JSON.stringify(request).slice(0, 20);
        expect(protocolErrorOf(await session.invokeText(truncated, request), 400).kind).toBe(
          "invalid_request",
        );
      },
    },
    {
      name: "refuses a JSON body that is not an InvokeRequest with 400 invalid_request naming the fields",
      async run(session) {
        const request = session.plainRequest(firstId);
        const { idempotencyKey: _dropped, ...withoutKey } = request;
        const body = JSON.stringify({ ...withoutKey, subject: { groups: [] } });
        const error = protocolErrorOf(await session.invokeText(body, request), 400);
        expect(error.kind).toBe("invalid_request");
        expect(error.issues?.map((issue) => issue.path)).toEqual(
          expect.arrayContaining(["idempotencyKey", "subject.user"]),
        );
      },
    },
    {
      name: "answers not_found for the execution status of a key never used",
      async run(session) {
        const key = `contract-${session.run}-never-used`;
        const answer = await session.status(key);
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(ExecutionStatus.parse(answer.body)).toEqual({ idempotencyKey: key, status: "not_found" });
      },
    },
    {
      name: "answers 404 not_found for a target that does not exist, if it declares a target",
      async run(session) {
        const kinds = declaredTargetKinds(session);
        if (kinds.length === 0) notApplicable("the provider declares no target");
        for (const kind of kinds) {
          const answer = await session.target(kind, `contract-kit-${session.run}-no-such-object`);
          expect(protocolErrorOf(answer, 404).kind).toBe("not_found");
        }
      },
    },
    {
      name: "answers an unknown route with 404 not_found",
      async run(session) {
        expect(protocolErrorOf(await session.getJson("/v1/no-such-route"), 404).kind).toBe("not_found");
      },
    },
  ];
}

/** The names of the grant checks, in order (tests of the kit refer to them). */
export const GRANT_CHECK_NAMES = {
  missing: "refuses invoke, status and target without a grant with 401 unauthenticated",
  foreignKey: "refuses a grant signed with a key the operator's JWKS does not hold with 403 forbidden",
  audience: "refuses a grant for another provider (audience) with 403 forbidden",
  otherCall: "refuses a grant signed for another call (the body changed after signing) with 403 forbidden",
  otherKey: "refuses a status grant for another idempotency key with 403 forbidden",
  replay: "refuses a grant used a second time with 403 forbidden",
  remembered: "refuses a forged grant for a key whose receipt it remembers, instead of replaying it",
  expired: "refuses an expired grant",
} as const;

function grantChecks(firstId: string): ContractCheck[] {
  return [
    {
      name: GRANT_CHECK_NAMES.missing,
      async run(session) {
        const request = session.plainRequest(firstId);
        const invoke = await session.invoke(request, { grant: "none" });
        expect(protocolErrorOf(invoke, 401).kind).toBe("unauthenticated");
        const status = await session.status(request.idempotencyKey, "none");
        expect(protocolErrorOf(status, 401).kind).toBe("unauthenticated");
        for (const kind of declaredTargetKinds(session)) {
          expect(protocolErrorOf(await session.target(kind, "any", "none"), 401).kind).toBe(
            "unauthenticated",
          );
        }
      },
    },
    {
      name: GRANT_CHECK_NAMES.foreignKey,
      async run(session) {
        const request = await session.requestFor(firstId);
        expectForbidden(await session.invoke(request, { grant: { foreignKey: true } }), "invoke");
        expectForbidden(await session.status(request.idempotencyKey, { foreignKey: true }), "status");
      },
    },
    {
      name: GRANT_CHECK_NAMES.audience,
      async run(session) {
        const request = await session.requestFor(firstId);
        const other = { claims: { aud: `contract-kit-other/${session.run}` } };
        expectForbidden(await session.invoke(request, { grant: other }), "invoke");
        expectForbidden(await session.status(request.idempotencyKey, other), "status");
      },
    },
    {
      name: GRANT_CHECK_NAMES.otherCall,
      async run(session) {
        const signed = await session.requestFor(firstId);
        // Same capability, key and subject user: only the body digest tells the calls apart.
        const sent = {
          ...signed,
          subject: { ...signed.subject, groups: [...signed.subject.groups, "contract-kit-added"] },
        };
        expectForbidden(await session.invoke(sent, { signedFor: signed }), "invoke");
      },
    },
    {
      name: GRANT_CHECK_NAMES.otherKey,
      async run(session) {
        const request = await session.requestFor(firstId);
        receiptOf(await session.invoke(request));
        const grant = await session.grantFor({
          route: "status",
          idempotencyKey: `${request.idempotencyKey}-other`,
        });
        expectForbidden(await session.status(request.idempotencyKey, { grant: grant! }), "status");
      },
    },
    {
      name: GRANT_CHECK_NAMES.replay,
      async run(session) {
        const request = await session.requestFor(firstId);
        const grant = (await session.grantFor({ route: "invoke", body: request, request }))!;
        receiptOf(await session.invoke(request, { grant: { grant } }));
        expectForbidden(await session.invoke(request, { grant: { grant } }), "the second invoke");
      },
    },
    {
      name: GRANT_CHECK_NAMES.remembered,
      async run(session) {
        const request = await session.requestFor(firstId);
        receiptOf(await session.invoke(request));
        expectForbidden(await session.invoke(request, { grant: { foreignKey: true } }), "invoke");
        expectForbidden(await session.status(request.idempotencyKey, { foreignKey: true }), "status");
      },
    },
    {
      name: GRANT_CHECK_NAMES.expired,
      async run(session) {
        const request = await session.requestFor(firstId);
        const now = Math.floor(Date.now() / 1000);
        const answer = await session.invoke(request, { grant: { claims: { iat: now - 90, exp: now - 30 } } });
        const error = protocolErrorOf(answer, 401, 403);
        expect(["unauthenticated", "forbidden"]).toContain(error.kind);
      },
    },
  ];
}

/** Every check for a provider with these options, in the order they run. */
export function contractChecks(options: ProviderContractOptions): ContractCheck[] {
  const ids = Object.keys(options.examples);
  const firstId = ids[0];
  if (firstId === undefined) throw new Error(`contract kit ${options.name}: give at least one example`);
  return [
    ...manifestChecks,
    ...ids.flatMap(exampleChecks),
    ...protocolChecks(firstId),
    ...grantChecks(firstId),
  ];
}
