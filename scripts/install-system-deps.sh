#!/usr/bin/env bash
# System packages the integration tests need: a real etcd server (etcd discovery backend) and a
# real NATS server (nats request plane) for the Dynamo harness, and a headless Chromium that
# renders the conformance suite's HTML report (tests/test_conformance_html.py).
# Idempotent: installs only what is missing.
set -euo pipefail
missing=()
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  missing+=(etcd-server)
fi
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ] && [ ! -x /usr/bin/nats-server ]; then
  missing+=(nats-server)
fi
if ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package(s) ${missing[*]} (real etcd / NATS for the harness tests; chromium for the HTML report test)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "note: ${missing[*]} not installed and this is not a root Debian shell;" >&2
  echo "      install them to run the etcd-backed and nats request-plane harness tests and the HTML report test" >&2
fi
