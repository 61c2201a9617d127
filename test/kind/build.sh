#!/usr/bin/env bash
# Builds the kind CLI from its Go module into a cache outside the repo, like test/helm/build.sh builds
# Helm, and prints the folder holding `kind` as its last line. Only the `kind` e2e target needs it
# (test/cluster/src/target-kind.ts runs it on demand); `make test` does not build it.
#
#   test/kind/build.sh            build if the cache is missing, print the bin folder
#   test/kind/build.sh --regen    regenerate the wrapper go.mod/go.sum from upstream, then build
#
# Its cache key is its own (kind-<version>-<hash of go/go.sum>). The flags are those of kind's Makefile
# (`-trimpath -ldflags "-buildid= -w"`) plus `-s`; the version `kind version` prints is kind's own
# constant (pkg/cmd/kind/version.versionCore), so no -X is needed. The module proxy carries no git
# commit, so kind's gitCommit stays empty, as in any `go install sigs.k8s.io/kind@<version>`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KIND_VERSION=${KIND_VERSION:-v0.33.0}
mod="$here/go"
# shellcheck source=../go-tools/cache.sh
. "$here/../go-tools/cache.sh"

[ "${1:-}" = "--regen" ] && go_tool_regen gatehouse.dev/test-kind "sigs.k8s.io/kind@$KIND_VERSION"

go_tool_cache kind "$KIND_VERSION"
( cd "$mod"
  echo "building kind $KIND_VERSION" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -buildid=" -o "$out/bin/kind" sigs.k8s.io/kind )
go_tool_done kind "$KIND_VERSION"
