#!/usr/bin/env bash
# System packages the integration tests need: a real etcd server for the Dynamo harness.
set -euo pipefail
if command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package etcd-server (real etcd for the harness tests)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
else
  echo "note: etcd is not installed and this is not a root Debian shell;" >&2
  echo "      install 'etcd-server' to run the etcd-backed harness tests" >&2
fi
