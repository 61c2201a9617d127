/**
 * The Dagger pipeline, on the Dagger TypeScript SDK:
 *
 *   node ci/dagger/main.ts images   # build every image (images.ts) from its Dockerfile
 *   node ci/dagger/main.ts e2e      # run the e2e suite on kind (e2e-on-kind.ts), the images loaded into it
 *   node ci/dagger/main.ts          # both, images first
 *
 * It needs the `dagger` CLI on PATH and a container engine for the Dagger engine (the SDK starts it
 * through the CLI); see docs/install.md, "The Dagger pipeline". On a machine without one it is typechecked only (`make check`).
 * Exit status 0 when every step passed, 1 when one failed (its output is in the log), 2 on a usage
 * error.
 */
import { fileURLToPath } from "node:url";
import { connection, dag, ImageMediaTypes } from "@dagger.io/dagger";
import { e2eOnKind, type ImageTarball } from "./e2e-on-kind.ts";
import { buildImage, imageSpecs } from "./images.ts";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const STEPS = ["images", "e2e"] as const;
type Step = (typeof STEPS)[number];

/** The steps `args` ask for (none: all, in order). Throws naming the unknown argument. */
export function stepsOf(args: readonly string[]): Step[] {
  if (args.length === 0) return [...STEPS];
  return args.map((arg) => {
    if (!(STEPS as readonly string[]).includes(arg)) {
      throw new Error(`unknown step ${arg}: use ${STEPS.join(", ")} (none: all)`);
    }
    return arg as Step;
  });
}

async function main(args: string[]): Promise<number> {
  let steps: Step[];
  try {
    steps = stepsOf(args);
  } catch (error) {
    console.error(String(error instanceof Error ? error.message : error));
    return 2;
  }
  await connection(
    async () => {
      const source = dag
        .host()
        .directory(REPO_ROOT, { exclude: ["node_modules/", ".run/", ".tools/", ".git/"] });
      if (steps.includes("images")) {
        for (const spec of imageSpecs(REPO_ROOT)) {
          const id = await buildImage(source, spec).id();
          console.log(`built ${spec.name} from ${spec.dockerfile} (${id.slice(0, 24)}…)`);
        }
      }
      if (steps.includes("e2e")) {
        const images: ImageTarball[] = imageSpecs(REPO_ROOT).map((spec) => ({
          name: spec.name,
          tarball: buildImage(source, spec).asTarball({ mediaTypes: ImageMediaTypes.Docker }),
        }));
        console.log(await e2eOnKind(source, images).stdout());
      }
    },
    { LogOutput: process.stderr },
  );
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    },
  );
}
