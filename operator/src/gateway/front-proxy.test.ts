import type { PeerCertificate } from "node:tls";
import { describe, expect, it } from "vitest";
import {
  NotFromFrontProxy,
  proxiedUser,
  type RequestHeaderConfig,
  requestHeaderConfigOf,
} from "./front-proxy.ts";

/** As kube-apiserver publishes it with the local control plane's flags. */
const PUBLISHED = {
  "client-ca-file": "CLIENT CA",
  "requestheader-client-ca-file": "FRONT PROXY CA",
  "requestheader-allowed-names": '["front-proxy-client"]',
  "requestheader-username-headers": '["X-Remote-User"]',
  "requestheader-uid-headers": '["X-Remote-Uid"]',
  "requestheader-group-headers": '["X-Remote-Group"]',
  "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
};

const config: RequestHeaderConfig = requestHeaderConfigOf(PUBLISHED);
const peer = (cn: string) => ({ subject: { CN: cn } }) as unknown as PeerCertificate;

describe("requestHeaderConfigOf", () => {
  it("reads the front proxy's CA, allowed names and header names", () => {
    expect(config).toEqual({
      clientCa: "FRONT PROXY CA",
      allowedNames: ["front-proxy-client"],
      usernameHeaders: ["X-Remote-User"],
      uidHeaders: ["X-Remote-Uid"],
      groupHeaders: ["X-Remote-Group"],
      extraHeaderPrefixes: ["X-Remote-Extra-"],
    });
  });

  it("refuses a ConfigMap without a requestheader CA, naming the API server flag", () => {
    expect(() => requestHeaderConfigOf({ "client-ca-file": "CLIENT CA" })).toThrow(
      /no requestheader-client-ca-file: the API server runs without --requestheader-client-ca-file/,
    );
  });
});

describe("proxiedUser", () => {
  const headers = {
    "x-remote-user": ["alice"],
    "x-remote-uid": ["u-1"],
    "x-remote-group": ["planners", "system:authenticated"],
    "x-remote-extra-scopes": ["a", "b"],
    "x-remote-extra-acme.com%2fproject": ["p1"],
    authorization: ["Bearer must-not-matter"],
  };

  it("takes the user, uid, groups and extra from the headers of a verified front proxy", () => {
    expect(proxiedUser({ authorized: true, peer: peer("front-proxy-client") }, headers, config)).toEqual({
      username: "alice",
      uid: "u-1",
      groups: ["planners", "system:authenticated"],
      extra: { scopes: ["a", "b"], "acme.com/project": ["p1"] },
    });
  });

  it("refuses a request whose certificate did not chain to the front proxy's CA, whatever its headers say", () => {
    expect(() =>
      proxiedUser({ authorized: false, peer: peer("front-proxy-client") }, headers, config),
    ).toThrow(NotFromFrontProxy);
    expect(() => proxiedUser({ authorized: false, peer: undefined }, headers, config)).toThrow(
      /only the API server's front proxy may call this API/,
    );
  });

  it("refuses a certificate of the right CA with a name not allowed", () => {
    expect(() => proxiedUser({ authorized: true, peer: peer("someone") }, headers, config)).toThrow(
      /client certificate CN "someone" is not an allowed front proxy/,
    );
  });

  it("accepts any name the CA signed when no names are listed, as the API server does", () => {
    const anyName = { ...config, allowedNames: [] };
    expect(proxiedUser({ authorized: true, peer: peer("someone") }, headers, anyName).username).toBe("alice");
  });

  it("refuses a proxied request that names no user", () => {
    expect(() =>
      proxiedUser(
        { authorized: true, peer: peer("front-proxy-client") },
        { "x-remote-group": ["g"] },
        config,
      ),
    ).toThrow(/named no user/);
  });
});
