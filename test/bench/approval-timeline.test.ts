import { describe, expect, it } from "vitest";
import type { ApiRequest } from "./api-audit-log.ts";
import { approvalStages } from "./approval-timeline.ts";

const CONTROLLER = "system:serviceaccount:gatehouse-system:gatehouse-controller";

function request(part: Partial<ApiRequest> & Pick<ApiRequest, "receivedMs" | "completedMs">): ApiRequest {
  return {
    verb: "get",
    user: CONTROLLER,
    resource: "validatingadmissionpolicies",
    subresource: undefined,
    namespace: undefined,
    name: "p",
    code: 200,
    ...part,
  };
}

describe("an approval's stages from the API server's log", () => {
  it("cuts answer → provider at the watch, the first request, the admission check and the status writes before the call", () => {
    const requests: ApiRequest[] = [
      // Before the answer, someone else's, and after the provider's call: none of them count.
      request({ receivedMs: 990, completedMs: 995 }),
      request({ user: "alice", receivedMs: 1001, completedMs: 1002 }),
      request({ receivedMs: 1006, completedMs: 1009 }),
      request({ resource: "validatingadmissionpolicybindings", receivedMs: 1007, completedMs: 1012 }),
      request({
        verb: "patch",
        resource: "approvals",
        subresource: "status",
        name: "apr-1",
        receivedMs: 1020,
        completedMs: 1026,
      }),
      request({ verb: "patch", resource: "approvals", name: "apr-2", receivedMs: 1021, completedMs: 1022 }),
      request({
        verb: "patch",
        resource: "approvals",
        subresource: "status",
        name: "apr-1",
        receivedMs: 1045,
        completedMs: 1050,
      }),
    ];
    expect(
      approvalStages(
        { approval: "apr-1", answeredMs: 1000, watchedMs: 1003, providerMs: 1040 },
        requests,
        CONTROLLER,
      ),
    ).toEqual({
      watch: 3,
      toFirstRequest: 6,
      admissionCheck: 6,
      statusWrites: 6,
      statusWritesBefore: 1,
      checkToProvider: 28,
    });
  });

  it("leaves out what the log does not show: no watch seen, no admission check in the window", () => {
    const stages = approvalStages(
      { approval: "apr-1", answeredMs: 1000, watchedMs: undefined, providerMs: 1040 },
      [],
      CONTROLLER,
    );
    expect(stages).toEqual({
      watch: undefined,
      toFirstRequest: undefined,
      admissionCheck: undefined,
      statusWrites: 0,
      statusWritesBefore: 0,
      checkToProvider: undefined,
    });
  });
});
