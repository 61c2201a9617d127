/**
 * The e2e suite on the `kind` target (test/cluster/src/target.ts) inside Dagger: a Docker engine runs
 * as a privileged service (`docker:dind`), and a Go + Node container with the repository runs
 * `npx vitest run --project cluster` with `GATEHOUSE_E2E_TARGET=kind` and `DOCKER_HOST` pointing at
 * that engine. testcontainers finds the engine there, and the kind CLI (built from its Go module by
 * `test/kind/build.sh`, driving the engine through the `docker` CLI copied from `docker:28-cli`)
 * creates the cluster's node container in it; the images the pipeline built are loaded into the
 * engine first and named in `GATEHOUSE_E2E_IMAGES`, so the harness loads them into the kind node. Go is
 * there for kind and for `test/cluster/build.sh`, which builds the matching kubectl (both cached in a
 * Dagger cache volume, as on a developer machine in `~/.cache/gatehouse`); Node 24 comes from
 * `scripts/ensure-node.sh`.
 */
import { type Container, type Directory, dag, type File } from "@dagger.io/dagger";

/** The Go toolchain test/cluster/go/*\/go.mod asks for (`go 1.26.8`), on Debian bookworm. */
export const GO_IMAGE = "golang:1.26.8-bookworm";
/** The Docker engine the suite's testcontainers and kind talk to. */
export const DOCKER_ENGINE_IMAGE = "docker:28-dind";
/** Where the `docker` CLI kind runs comes from (a static binary at /usr/local/bin/docker). */
export const DOCKER_CLI_IMAGE = "docker:28-cli";

/** An image the pipeline built, as a tarball to load into the engine under `name`. */
export interface ImageTarball {
  name: string;
  tarball: File;
}

/**
 * The shell lines that load each of `images` from `/images/<index>.tar` into the engine and tag it
 * with its name (`docker load` names the image by its ID when the tarball carries no tag). Throws
 * when a name is not a plain image reference, since it is put into the script.
 */
export function loadImagesScript(images: readonly ImageTarball[]): string {
  return images
    .map((image, index) => {
      if (!/^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?$/.test(image.name)) {
        throw new Error(`image name ${image.name} is not a plain image reference`);
      }
      return `loaded=$(docker load -q -i /images/${index}.tar | awk 'END { print $NF }'); docker tag "$loaded" ${image.name}`;
    })
    .join("; ");
}

/** The privileged Docker engine service, reachable as tcp://docker:2375 from containers bound to it. */
function dockerEngine() {
  return dag
    .container()
    .from(DOCKER_ENGINE_IMAGE)
    .withEnvVariable("DOCKER_TLS_CERTDIR", "")
    .withMountedCache("/var/lib/docker", dag.cacheVolume("gatehouse-dind-var-lib-docker"))
    .withExposedPort(2375)
    .asService({
      args: ["dockerd", "--host=tcp://0.0.0.0:2375", "--tls=false"],
      useEntrypoint: true,
      insecureRootCapabilities: true,
    });
}

/**
 * The container that has run the cluster project on kind against `source` (the repository root,
 * without node_modules, .run or .tools), with `images` loaded into the kind node. Lazy:
 * `await e2eOnKind(source, images).stdout()` runs it and fails when a test fails; every file that needs
 * the local node is skipped there with its reason (target.ts).
 */
export function e2eOnKind(source: Directory, images: readonly ImageTarball[] = []): Container {
  let container = dag
    .container()
    .from(GO_IMAGE)
    .withFile("/usr/local/bin/docker", dag.container().from(DOCKER_CLI_IMAGE).file("/usr/local/bin/docker"))
    .withServiceBinding("docker", dockerEngine())
    .withEnvVariable("DOCKER_HOST", "tcp://docker:2375")
    .withEnvVariable("GATEHOUSE_E2E_TARGET", "kind")
    .withEnvVariable("GATEHOUSE_E2E_IMAGES", images.map((image) => image.name).join(","))
    .withMountedCache("/root/.cache/gatehouse", dag.cacheVolume("gatehouse-binaries"))
    .withMountedCache("/go/pkg/mod", dag.cacheVolume("gatehouse-go-modules"))
    .withMountedCache("/root/.npm", dag.cacheVolume("gatehouse-npm"))
    .withMountedDirectory("/src", source)
    .withWorkdir("/src");
  for (const [index, image] of images.entries()) {
    container = container.withMountedFile(`/images/${index}.tar`, image.tarball);
  }
  const steps = [
    'export PATH="$(scripts/ensure-node.sh):$PATH"',
    ...(images.length > 0 ? [loadImagesScript(images)] : []),
    "npm ci --no-audit --no-fund",
    "npx vitest run --project cluster",
  ];
  return container.withExec(["bash", "-euo", "pipefail", "-c", steps.join("; ")]);
}
