#!/usr/bin/env bash
# Installs everything Brisk needs on a fresh Debian 12 machine: build
# dependencies (apt), test dependencies (pip) and the embedded default model.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libxxhash-dev
  libyaml-cpp-dev libboost1.81-dev libsqlite3-dev libpq-dev postgresql libvalijson-dev
  unzip python3-pip prometheus fortunes chromium chromium-driver libjs-chart.js
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt

bash scripts/install_models.sh
