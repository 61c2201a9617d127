/**
 * The contract-test kit's checks of a manifest, as pure functions returning problems (empty = fine), so
 * they are unit-tested on bad manifests and the kit's tests print every problem at once.
 */
import { CAPABILITY_ID_PATTERN, type Manifest } from "../contract.ts";
import { capabilitySchemaProblems } from "../schema-check.ts";

/** Duplicate or malformed capability ids (DESIGN §2 pattern, ≤ 64 characters). */
export function capabilityIdProblems(manifest: Manifest): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { id } of manifest.capabilities) {
    if (seen.has(id)) problems.push(`capability ${id} is offered twice; ids must be unique`);
    seen.add(id);
    if (!CAPABILITY_ID_PATTERN.test(id) || id.length > 64) {
      problems.push(
        `capability id ${id} must match ${CAPABILITY_ID_PATTERN.source} and have at most 64 characters`,
      );
    }
  }
  return problems;
}

/** Schema problems of every offer (see `schema-check.ts`), each prefixed with the capability id. */
export function manifestSchemaProblems(manifest: Manifest): string[] {
  return manifest.capabilities.flatMap((offer) =>
    capabilitySchemaProblems(offer).map((problem) => `${offer.id}: ${problem}`),
  );
}

/** Offered capabilities without an example, and examples for capabilities not offered. */
export function exampleCoverageProblems(manifest: Manifest, exampleIds: readonly string[]): string[] {
  const offered = new Set(manifest.capabilities.map((offer) => offer.id));
  const examples = new Set(exampleIds);
  return [
    ...[...offered]
      .filter((id) => !examples.has(id))
      .map((id) => `capability ${id} is offered but the contract test has no example for it`),
    ...[...examples]
      .filter((id) => !offered.has(id))
      .map((id) => `the contract test has an example for ${id}, which the manifest does not offer`),
  ];
}
