#!/usr/bin/env bash
# System packages the integration tests need: a real etcd server for the Dynamo harness, and a
# headless Chromium that renders the conformance suite's HTML report (tests/test_conformance_html.py).
set -euo pipefail
need=()
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  need+=(etcd-server)
fi
if ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package(s) ${need[*]} (real etcd for the harness tests; chromium for the HTML report test)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "note: ${need[*]} not installed and this is not a root Debian shell;" >&2
  echo "      install them to run the etcd-backed harness tests and the HTML report test" >&2
fi
