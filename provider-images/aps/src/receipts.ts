/**
 * What the `aps` provider answers for a draft or a publish, built in one place: the handlers use it for
 * the APS's live answer, and the status query (`aps-records.ts`) for the answer the APS recorded under
 * an idempotency key — so a receipt recovered after a lost response is the receipt the call would have
 * returned.
 */
import type { InvokeResponse } from "@gatehouse/provider-sdk";
import type { HandlerResult } from "@gatehouse/provider-sdk/server";
import { type ApsOperationRecord, ApsPlanVersion, ApsPublication, httpFailure } from "./aps-client.ts";

/** A draft: the new version, with evidence `<planId>@v<version>`. */
export function draftResult(draft: ApsPlanVersion): HandlerResult {
  return { result: draft, evidence: { system: "aps", reference: `${draft.id}@v${draft.version}` } };
}

/** A publish: the publication, with its publication id as evidence. */
export function publishResult(publication: ApsPublication): HandlerResult {
  return { result: publication, evidence: { system: "aps", reference: publication.publicationId } };
}

/** The APS's name of each keyed operation in refusal messages (as `aps-client.ts` words them). */
const operationNames: Record<ApsOperationRecord["operation"], string> = {
  draft: "create draft",
  publish: "publish",
};

/**
 * The receipt of a recorded operation: succeeded with the result the handler would have returned for
 * the recorded 2xx answer, failed with the kind `aps-client.ts` gives the recorded refusal. Throws a
 * ZodError when a recorded 2xx body is not what the APS answers for that operation.
 */
export function receiptOfRecord(record: ApsOperationRecord): InvokeResponse {
  if (record.statusCode >= 200 && record.statusCode < 300) {
    const { result, evidence } =
      record.operation === "publish"
        ? publishResult(ApsPublication.parse(record.body))
        : draftResult(ApsPlanVersion.parse(record.body));
    return { status: "succeeded", result, ...(evidence ? { evidence } : {}) };
  }
  const failure = httpFailure(record.statusCode, record.body, operationNames[record.operation], true);
  return { status: "failed", errorKind: failure.kind, message: failure.message };
}
