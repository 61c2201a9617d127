#!/usr/bin/env bash
# Installs the host tools the local cluster harness shells out to (test/cluster/src/prerequisites.ts)
# when one is missing: iproute2 (`ip`), openssl, util-linux (`setpriv`) and nftables (`nft`), with
# apt-get, and loads the kernel module br_netfilter when it can. Does nothing when all are present;
# prints what it installs. Needs root for apt-get.
set -euo pipefail
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v openssl >/dev/null || missing+=(openssl)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v nft >/dev/null || missing+=(nftables)
# The local node enforces NetworkPolicy through bridge netfilter (kernel module br_netfilter).
if [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] && command -v modprobe >/dev/null; then
  modprobe br_netfilter || echo "host-deps: could not load br_netfilter; the local node stops without it" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "host-deps: missing ${missing[*]}; install them (the local cluster needs root and these tools)" >&2
  exit 1
fi
echo "host-deps: installing ${missing[*]} with apt-get" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
  || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
