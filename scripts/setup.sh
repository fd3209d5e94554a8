#!/usr/bin/env bash
# Installs what Brisk needs on a fresh Debian 12 machine: the build
# dependencies (apt) and the models; with --test also what the tests need
# (apt and pip). Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# What building and serving need (`brisk serve`, `brisk gateway` and its
# dashboard's chart library, `brisk bench` and its default text corpus).
APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libxxhash-dev
  libyaml-cpp-dev libboost1.81-dev libsqlite3-dev libpq-dev libvalijson-dev
  libzmq3-dev cppzmq-dev libssl-dev
  unzip python3-pip fortunes libjs-chart.js
)
# What the tests add: GoogleTest and Google Benchmark, clang's sanitizer and
# fuzzer runtimes, the real PostgreSQL, Prometheus and a browser the
# end-to-end tests run against, HAProxy, iproute2 and nftables for the hosts of the
# fleet test (network namespaces), and the Python test packages.
TEST_APT_PACKAGES=(
  clang libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev
  postgresql prometheus chromium chromium-driver haproxy nftables iproute2
)
with_tests=0
case "${1:-}" in
  --test) with_tests=1 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac
[ "$with_tests" = 1 ] && APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}")

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# msgpack-cxx (KV events), header-only. Debian's libmsgpack-cxx-dev depends on
# libboost-dev, which is Boost 1.74 and conflicts with the 1.81 the build uses,
# so its headers are unpacked from the same Debian package into .deps/ and
# built without Boost (MSGPACK_NO_BOOST).
if [ ! -f .deps/msgpack-cxx/usr/include/msgpack.hpp ]; then
  mkdir -p .deps
  (
    cd .deps
    apt-get download libmsgpack-cxx-dev 2>/dev/null || { apt-get update -qq && apt-get download libmsgpack-cxx-dev; }
    dpkg-deb -x libmsgpack-cxx-dev_*.deb msgpack-cxx
    rm -f libmsgpack-cxx-dev_*.deb
  )
fi

if [ "$with_tests" = 1 ]; then
  python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt
fi

bash scripts/install_models.sh
