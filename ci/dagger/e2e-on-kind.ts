/**
 * The e2e suite on the `kind` target (test/cluster/src/target.ts) inside Dagger: a Docker engine runs
 * as a privileged service (`docker:dind`), and a Go + Node container with the repository runs
 * `npx vitest run --project cluster` with `GATEHOUSE_E2E_TARGET=kind` and `DOCKER_HOST` pointing at
 * that engine, so testcontainers starts the cluster's node container there. Go is there for
 * `test/cluster/build.sh`, which builds the matching kubectl (cached in a Dagger cache volume, as on a
 * developer machine in `~/.cache/gatehouse`); Node 24 comes from `scripts/ensure-node.sh`.
 */
import { type Container, type Directory, dag } from "@dagger.io/dagger";

/** The Go toolchain test/cluster/go/*\/go.mod asks for (`go 1.26.8`), on Debian bookworm. */
export const GO_IMAGE = "golang:1.26.8-bookworm";
/** The Docker engine the suite's testcontainers talks to. */
export const DOCKER_ENGINE_IMAGE = "docker:28-dind";

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
 * without node_modules, .run or .tools). Lazy: `await e2eOnKind(source).stdout()` runs it and fails
 * when a test fails; every file that needs the local node is skipped there with its reason (target.ts).
 */
export function e2eOnKind(source: Directory): Container {
  return dag
    .container()
    .from(GO_IMAGE)
    .withServiceBinding("docker", dockerEngine())
    .withEnvVariable("DOCKER_HOST", "tcp://docker:2375")
    .withEnvVariable("GATEHOUSE_E2E_TARGET", "kind")
    .withMountedCache("/root/.cache/gatehouse", dag.cacheVolume("gatehouse-control-plane-binaries"))
    .withMountedCache("/go/pkg/mod", dag.cacheVolume("gatehouse-go-modules"))
    .withMountedCache("/root/.npm", dag.cacheVolume("gatehouse-npm"))
    .withMountedDirectory("/src", source)
    .withWorkdir("/src")
    .withExec([
      "bash",
      "-euo",
      "pipefail",
      "-c",
      'export PATH="$(scripts/ensure-node.sh):$PATH"; npm ci --no-audit --no-fund; npx vitest run --project cluster',
    ]);
}
