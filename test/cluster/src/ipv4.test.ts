import { describe, expect, it } from "vitest";
import { addressAt, contains, intToIp, ipToInt, networkSize, parseCidr } from "./ipv4.ts";

describe("ipv4", () => {
  it("round-trips dotted quads through integers", () => {
    expect(intToIp(ipToInt("10.88.4.1"))).toBe("10.88.4.1");
    expect(ipToInt("255.255.255.255")).toBe(2 ** 32 - 1);
  });

  it("clears host bits when parsing a CIDR", () => {
    const net = parseCidr("10.88.5.7/22");
    expect(intToIp(net.base)).toBe("10.88.4.0");
    expect(networkSize(net)).toBe(1024);
  });

  it("knows which addresses a /22 holds", () => {
    const net = parseCidr("10.88.4.0/22");
    expect(contains(net, "10.88.7.254")).toBe(true);
    expect(contains(net, "10.88.8.1")).toBe(false);
    expect(addressAt(net, 1023)).toBe("10.88.7.255");
  });

  it("rejects text that is not an address", () => {
    expect(() => ipToInt("10.88.4")).toThrow();
    expect(() => ipToInt("10.88.4.256")).toThrow();
  });
});
