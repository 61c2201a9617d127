# Shared by test/helm/build.sh and test/kind/build.sh (sourced, not run): a tool built from its Go module
# through a wrapper module (`go get -tool`, pinned go.mod/go.sum in the repo) into a cache outside the
# repo, `${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/<name>-<version>-<first 12 hex of sha256(go.sum)>`,
# as test/cluster/build.sh does for the control plane. The caller sets `mod` (the wrapper module's folder).

export GOFLAGS=${GOFLAGS:--mod=mod}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

# go_tool_regen MODULE_PATH TOOL@VERSION: rewrite the wrapper's go.mod/go.sum from upstream.
go_tool_regen() {
  ( cd "$mod"
    rm -f go.mod go.sum
    go mod init "$1" >/dev/null 2>&1
    go get -tool "$2"
    go mod tidy )
}

# go_tool_cache NAME VERSION: sets `out` to the cache folder; when `out/bin/NAME` is built (marker
# `.complete`), prints `out/bin` and exits 0; otherwise creates `out/bin` and records the start time.
go_tool_cache() {
  local hash
  hash=$(sha256sum < "$mod/go.sum" | cut -c1-12)
  out="${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/$1-$2-${hash}"
  if [ -x "$out/bin/$1" ] && [ -f "$out/.complete" ]; then
    echo "$out/bin"; exit 0
  fi
  mkdir -p "$out/bin"
  go_tool_start=$(date +%s)
}

# go_tool_done NAME VERSION: writes the `.complete` marker (version, build seconds) and prints `out/bin`.
go_tool_done() {
  printf '{"%sVersion":"%s","buildSeconds":%d,"finishedAt":"%s"}\n' \
    "$1" "$2" $(( $(date +%s) - go_tool_start )) "$(date -u +%FT%TZ)" > "$out/.complete"
  echo "$out/bin"
}
