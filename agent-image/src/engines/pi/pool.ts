/**
 * Several Pi hosts handed out to runs: a run takes an idle one, or waits for the first one freed.
 * For the conformance suite, where one case's aborted run may keep its Pi busy (settling, or being
 * restarted) while the next case starts; a pod has one run and one host.
 */
import type { PiHost, PiHosts } from "./host.ts";

export function piHostPool(hosts: PiHost[]): PiHosts {
  const idle = [...hosts];
  const waiting: ((host: PiHost) => void)[] = [];
  const giveBack = (host: PiHost) => {
    const next = waiting.shift();
    if (next) next(host);
    else idle.push(host);
  };
  return {
    async acquire() {
      const host = idle.shift() ?? (await new Promise<PiHost>((resolve) => waiting.push(resolve)));
      const { release } = await host.acquire();
      return {
        host,
        release: () => {
          release();
          giveBack(host);
        },
      };
    },
  };
}
