#!/bin/bash
# Installs what kvspec needs on a Debian 12 machine, and skips what is there.
#
#   tools/setup.sh
#
# Everything comes from Debian's archive (no other download): Bazel
# (bazel-bootstrap 4.2.3), g++ and clang (tools/determinism.sh builds with
# both), GoogleTest, Abseil, Protobuf and protoc, and python3 for
# tools/test_summary.py. Runs apt-get only when a package is
# missing; uses sudo when not run as root.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap
  clang
  g++
  libabsl-dev
  libgtest-dev
  libprotobuf-dev
  pkg-config
  protobuf-compiler
  python3
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null \
      | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: every package is installed (${PACKAGES[*]})"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
echo "setup: done"
