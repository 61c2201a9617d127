import { describe, expect, it } from "vitest";
import { IpAllocator } from "./ip-allocator.ts";

describe("IpAllocator", () => {
  it("never hands out the network, bridge or broadcast address", () => {
    const ips = new IpAllocator("10.88.4.0/29", "10.88.4.1");
    const got = [ips.allocate(), ips.allocate(), ips.allocate(), ips.allocate(), ips.allocate()].map(
      (a) => a.ip,
    );
    expect(got).toEqual(["10.88.4.2", "10.88.4.3", "10.88.4.4", "10.88.4.5", "10.88.4.6"]);
    expect(() => ips.allocate()).toThrow(/no free pod address/);
  });

  it("does not reuse a released address before the others", () => {
    const ips = new IpAllocator("10.88.4.0/22", "10.88.4.1");
    const first = ips.allocate();
    ips.release(first.slot);
    expect(ips.allocate().ip).toBe("10.88.4.3");
  });
});
