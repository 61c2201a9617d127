import { HarnessError } from "../errors.ts";
import { addressAt, ipToInt, networkSize, parseCidr } from "../ipv4.ts";

/** One pod address: its slot (offset in the pod CIDR, also used in interface names) and the address. */
export type PodAddress = { slot: number; ip: string };

/**
 * Hands out pod addresses from `podCIDR`, skipping the network and broadcast addresses and the bridge
 * address. Allocation goes round-robin so a freed address is not reused at once (EndpointSlices and
 * clients may still point at it for a moment).
 */
export class IpAllocator {
  private readonly network: ReturnType<typeof parseCidr>;
  private readonly reserved: number;
  private readonly used = new Set<number>();
  private cursor = 1;

  constructor(podCIDR: string, bridgeIP: string) {
    this.network = parseCidr(podCIDR);
    this.reserved = ipToInt(bridgeIP) - this.network.base;
  }

  /** Takes the next free address; throws `unavailable` when the range is exhausted. */
  allocate(): PodAddress {
    const size = networkSize(this.network);
    for (let i = 0; i < size; i++) {
      this.cursor = (this.cursor % (size - 2)) + 1;
      const slot = this.cursor;
      if (slot === this.reserved || this.used.has(slot)) continue;
      this.used.add(slot);
      return { slot, ip: addressAt(this.network, slot) };
    }
    throw new HarnessError("unavailable", `no free pod address left in ${intToCidr(this.network)}`);
  }

  /** Returns `slot` to the pool. */
  release(slot: number): void {
    this.used.delete(slot);
  }
}

function intToCidr(network: ReturnType<typeof parseCidr>): string {
  return `${addressAt(network, 0)}/${network.prefixLength}`;
}
