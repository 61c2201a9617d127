import { parseArgs } from "node:util";
import { z } from "zod";

/** Validated command line of the local node (`main.ts`). */
export type NodeConfig = z.infer<typeof NodeConfigSchema>;

const NodeConfigSchema = z.object({
  kubeconfig: z.string().min(1),
  context: z.string().min(1),
  nodeName: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "must be a DNS subdomain"),
  bridgeIP: z.ipv4(),
  podCIDR: z.cidrv4(),
  runDir: z.string().min(1),
});

/**
 * Parses `--kubeconfig F --context C --node-name N --bridge-ip IP --pod-cidr CIDR --run-dir D`
 * (context defaults to `local-node`). Throws a ZodError naming the bad flag.
 */
export function parseNodeConfig(argv: readonly string[]): NodeConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      kubeconfig: { type: "string" },
      context: { type: "string", default: "local-node" },
      "node-name": { type: "string" },
      "bridge-ip": { type: "string" },
      "pod-cidr": { type: "string" },
      "run-dir": { type: "string" },
    },
    strict: true,
  });
  return NodeConfigSchema.parse({
    kubeconfig: values.kubeconfig,
    context: values.context,
    nodeName: values["node-name"],
    bridgeIP: values["bridge-ip"],
    podCIDR: values["pod-cidr"],
    runDir: values["run-dir"],
  });
}

/** The inverse of {@link parseNodeConfig}: the flags that start a local node with `config`. */
export function nodeConfigArgs(config: NodeConfig): string[] {
  return [
    `--kubeconfig=${config.kubeconfig}`,
    `--context=${config.context}`,
    `--node-name=${config.nodeName}`,
    `--bridge-ip=${config.bridgeIP}`,
    `--pod-cidr=${config.podCIDR}`,
    `--run-dir=${config.runDir}`,
  ];
}
