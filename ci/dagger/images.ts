/**
 * The images of the repository as the Dagger pipeline builds them: the operator (root
 * `Dockerfile`), the agent (`agent-image/Dockerfile`), one per provider
 * (`provider-images/<p>/Dockerfile`) and the example MCP agent (`examples/mcp-agent/Dockerfile`), each
 * built from the repository root as its context, as the comments of `.dockerignore` say.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Container, Directory } from "@dagger.io/dagger";

/** One image: its tag and its Dockerfile, relative to the repository root. */
export interface ImageSpec {
  name: string;
  dockerfile: string;
}

/**
 * The images whose Dockerfiles exist under `repoRoot`: `gatehouse/operator:dev`, `gatehouse/agent:dev`,
 * then `gatehouse/provider-<p>:dev` for each `provider-images/<p>/Dockerfile` in name order (the SDK
 * has none: it is a library), then `gatehouse/example-mcp-agent:dev`, the image the local cluster's
 * engines ConfigMap lists for `spec.engine: external`. Pure apart from reading the folder.
 */
export function imageSpecs(repoRoot: string): ImageSpec[] {
  const specs: ImageSpec[] = [];
  if (existsSync(join(repoRoot, "Dockerfile")))
    specs.push({ name: "gatehouse/operator:dev", dockerfile: "Dockerfile" });
  if (existsSync(join(repoRoot, "agent-image/Dockerfile"))) {
    specs.push({ name: "gatehouse/agent:dev", dockerfile: "agent-image/Dockerfile" });
  }
  const providers = readdirSync(join(repoRoot, "provider-images"), { withFileTypes: true })
    .filter(
      (entry) =>
        entry.isDirectory() && existsSync(join(repoRoot, "provider-images", entry.name, "Dockerfile")),
    )
    .map((entry) => entry.name)
    .sort();
  for (const provider of providers) {
    specs.push({
      name: `gatehouse/provider-${provider}:dev`,
      dockerfile: `provider-images/${provider}/Dockerfile`,
    });
  }
  if (existsSync(join(repoRoot, "examples/mcp-agent/Dockerfile"))) {
    specs.push({ name: "gatehouse/example-mcp-agent:dev", dockerfile: "examples/mcp-agent/Dockerfile" });
  }
  return specs;
}

/** The image `spec` built by the Dagger engine's BuildKit from `source` (the repository root). Lazy. */
export function buildImage(source: Directory, spec: ImageSpec): Container {
  return source.dockerBuild({ dockerfile: spec.dockerfile });
}
