#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl) from Go modules into a cache outside the repo (DESIGN §8), and prints the cache folder.
#
#   test/cluster/build.sh            build if the cache is missing, print the bin folder
#   test/cluster/build.sh --regen    regenerate the wrapper go.mod files from upstream, then build
#
# The Kubernetes wrapper replaces every `./staging/...` module of k8s.io/kubernetes' go.mod with its
# published v0.<minor>.<patch> tag; the list is generated from the downloaded go.mod (`--regen`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
export GOFLAGS=${GOFLAGS:--mod=mod}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

regen() {
  local k8s="$here/go/kubernetes" etcd="$here/go/etcd"
  local modfile staging_tag="v0.${K8S_VERSION#v1.}"
  modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  ( cd "$k8s"
    rm -f go.mod go.sum
    go mod init gatehouse.dev/test-cluster/kubernetes >/dev/null 2>&1
    grep -E '^\s+k8s\.io/[^ ]+ => \./staging/' "$modfile" | awk -v tag="$staging_tag" '{print "replace " $1 " => " $1 " " tag}' >> go.mod
    go get "k8s.io/kubernetes@$K8S_VERSION"
    for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      go get -tool "k8s.io/kubernetes/cmd/$cmd@$K8S_VERSION"
    done
    go mod tidy )
  ( cd "$etcd"
    rm -f go.mod go.sum
    go mod init gatehouse.dev/test-cluster/etcd >/dev/null 2>&1
    go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go mod tidy )
}

[ "${1:-}" = "--regen" ] && regen

hash=$(cat "$here/go/kubernetes/go.sum" "$here/go/etcd/go.sum" | sha256sum | cut -c1-12)
out="${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/${K8S_VERSION}-${hash}"
if [ -x "$out/bin/kubectl" ] && [ -x "$out/bin/etcd" ] && [ -f "$out/.complete" ]; then
  echo "$out/bin"; exit 0
fi
mkdir -p "$out/bin"
start=$(date +%s)
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldk="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
( cd "$here/go/kubernetes"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    echo "building $cmd $K8S_VERSION" >&2
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldk" -o "$out/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done )
( cd "$here/go/etcd"
  echo "building etcd $ETCD_VERSION" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3 )
end=$(date +%s)
printf '{"k8sVersion":"%s","etcdVersion":"%s","buildSeconds":%d,"finishedAt":"%s"}\n' \
  "$K8S_VERSION" "$ETCD_VERSION" $((end - start)) "$(date -u +%FT%TZ)" > "$out/.complete"
echo "$out/bin"
