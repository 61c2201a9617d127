#!/usr/bin/env bash
# Builds Helm from its Go module into a cache outside the repo, like test/cluster/build.sh builds the
# control plane, and prints the folder holding `helm` as its last line.
#
#   test/helm/build.sh            build if the cache is missing, print the bin folder
#   test/helm/build.sh --regen    regenerate the wrapper go.mod/go.sum from upstream, then build
#
# Its cache key is its own (helm-<version>-<hash of go/go.sum>), so the Kubernetes binaries' cache is
# untouched. The ldflags are the ones Helm's Makefile sets: the version `helm version` prints, and the
# default Kubernetes version of `helm lint`/`helm template` (client-go's minor, major + 1), without which
# Helm assumes v1.20.0 and a chart's `kubeVersion: >=1.33.0-0` fails lint.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
HELM_VERSION=${HELM_VERSION:-v3.22.0}
mod="$here/go"
# shellcheck source=../go-tools/cache.sh
. "$here/../go-tools/cache.sh"

[ "${1:-}" = "--regen" ] && go_tool_regen gatehouse.dev/test-helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"

go_tool_cache helm "$HELM_VERSION"
k8s=$(cd "$mod" && go list -f '{{.Version}}' -m k8s.io/client-go)   # v0.<minor>.<patch>
k8s_major=1; k8s_minor=${k8s#v0.}; k8s_minor=${k8s_minor%%.*}   # client-go v0.Y.Z ships with Kubernetes 1.Y
pkg=helm.sh/helm/v3
ld="-s -w -X $pkg/internal/version.version=$HELM_VERSION -X $pkg/internal/version.gitTreeState=clean"
ld+=" -X $pkg/pkg/lint/rules.k8sVersionMajor=$k8s_major -X $pkg/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
ld+=" -X $pkg/pkg/chartutil.k8sVersionMajor=$k8s_major -X $pkg/pkg/chartutil.k8sVersionMinor=$k8s_minor"
( cd "$mod"
  echo "building helm $HELM_VERSION (Kubernetes v$k8s_major.$k8s_minor defaults)" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out/bin/helm" "$pkg/cmd/helm" )
go_tool_done helm "$HELM_VERSION"
