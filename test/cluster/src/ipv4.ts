/** An IPv4 network: its first address as an unsigned 32-bit integer and its prefix length. */
export type Ipv4Network = { base: number; prefixLength: number };

/** Parses dotted-quad text into an unsigned 32-bit integer; throws on anything else. */
export function ipToInt(ip: string): number {
  const parts = ip.split(".");
  if (parts.length !== 4) throw new Error(`not an IPv4 address: ${ip}`);
  let value = 0;
  for (const part of parts) {
    const octet = Number(part);
    if (!/^\d{1,3}$/.test(part) || octet > 255) throw new Error(`not an IPv4 address: ${ip}`);
    value = value * 256 + octet;
  }
  return value;
}

/** Formats an unsigned 32-bit integer as dotted-quad text. */
export function intToIp(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

/** Parses `a.b.c.d/n` and returns the network with host bits cleared. */
export function parseCidr(cidr: string): Ipv4Network {
  const [ip, bits] = cidr.split("/");
  const prefixLength = Number(bits);
  if (ip === undefined || !Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > 32) {
    throw new Error(`not an IPv4 CIDR: ${cidr}`);
  }
  const size = 2 ** (32 - prefixLength);
  return { base: ipToInt(ip) - (ipToInt(ip) % size), prefixLength };
}

/** Number of addresses in the network (including network and broadcast addresses). */
export function networkSize(network: Ipv4Network): number {
  return 2 ** (32 - network.prefixLength);
}

/** True when `ip` lies inside `network`. */
export function contains(network: Ipv4Network, ip: string): boolean {
  const value = ipToInt(ip);
  return value >= network.base && value < network.base + networkSize(network);
}

/** The address at `offset` from the start of `network` (offset 0 is the network address). */
export function addressAt(network: Ipv4Network, offset: number): string {
  if (offset < 0 || offset >= networkSize(network)) throw new Error(`offset ${offset} outside the network`);
  return intToIp(network.base + offset);
}
