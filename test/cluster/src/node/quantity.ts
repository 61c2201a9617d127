import { HarnessError } from "../errors.ts";

/** Multipliers of the binary-SI, decimal-SI suffixes of a resource.Quantity. */
const SUFFIXES: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/**
 * The value of a Kubernetes resource quantity ("500m", "1.5Gi", "2", "1e3") as a number of base units
 * (cores, bytes). Grammar of k8s.io/apimachinery/pkg/api/resource/quantity.go (`<signedNumber><suffix>`,
 * suffix binary-SI, decimal-SI or a decimal exponent). Precision is a double's, ample for env values.
 * Throws an `invalid_arguments` HarnessError for anything else.
 */
export function parseQuantity(quantity: string): number {
  const match = QUANTITY.exec(quantity.trim());
  if (!match) throw new HarnessError("invalid_arguments", `"${quantity}" is not a resource quantity`);
  const [, number = "0", exponent, suffix = ""] = match;
  const multiplier = exponent ? 10 ** Number(exponent.slice(1)) : (SUFFIXES[suffix] ?? 1);
  return Number(number) * multiplier;
}
