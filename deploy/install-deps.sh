#!/usr/bin/env bash
# Installs the Debian 12 packages that building, running and testing dashcam need.
# Idempotent: when every package is already installed it changes nothing and
# does not touch the network.
#   install-deps.sh           what building and running need (and Node/Chromium, below)
#   install-deps.sh --tests   also what only the tests need: ClickHouse, whose
#                             tests start their own local cluster
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git curl openssl
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev sqlite3 libsimdjson-dev zlib1g-dev libssl-dev libzstd-dev
  libre2-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev clang-format
)
# Chromium runs the browser tests (tests/web, through playwright-core);
# like Node.js below, only the tests need it.
if [ "${DASHCAM_WITHOUT_NODE:-0}" != "1" ]; then
  packages+=(chromium)
fi
test_only=()
if [ "${1:-}" = "--tests" ]; then
  test_only=(clickhouse-server clickhouse-client)
  packages+=("${test_only[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js and npm run the tests that use real client libraries (the server
# itself needs neither). Any installed node/npm will do (a distribution's or
# NodeSource's), so they are checked as commands, not as Debian packages.
# DASHCAM_WITHOUT_NODE=1 skips them for a build without tests (deploy/Dockerfile).
if [ "${DASHCAM_WITHOUT_NODE:-0}" != "1" ] &&
  { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The tests run clickhouse-server from their own configs; the package's
# system service, which installing it enables (and on a running systemd
# starts), is not wanted: turn it off again when this script installed it.
for p in "${missing[@]}"; do
  if [ "$p" = clickhouse-server ] && [ -d /run/systemd/system ]; then
    "${sudo_cmd[@]}" systemctl disable --now clickhouse-server || true
  fi
done
