#!/bin/bash
# Installs what kvspec needs on a Debian 12 machine, and skips what is there.
#
#   tools/setup.sh
#
# From Debian's archive: Bazel (bazel-bootstrap 4.2.3), g++ and clang
# (tools/determinism.sh builds with both), GoogleTest, Abseil, Protobuf and
# protoc, pkg-config, and python3 with venv. For the bundled ports: the Rust
# toolchain (cargo from rustup when the machine has it, else Debian's cargo),
# a virtual environment for the Python port with its pinned packages from
# PyPI, the virtual environments of tools/capture_attention.py and
# tools/kvpress_check.py (torch from PyPI), and the mutation testers (mutmut from PyPI, cargo-mutants from
# crates.io). Uses sudo for apt-get when not run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  bazel-bootstrap
  clang
  g++
  libabsl-dev
  libbenchmark-dev
  libgtest-dev
  libprotobuf-dev
  pkg-config
  protobuf-compiler
  python3
  python3-venv
)

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
updated=0
apt_install() {
  if [[ $updated -eq 0 ]]; then "${sudo[@]}" apt-get update -qq; updated=1; fi
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@"
}

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null \
      | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: every Debian package is installed"
else
  echo "setup: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi

# Rust (conformance/ports/rust).
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
if command -v cargo >/dev/null; then
  echo "setup: $(cargo --version) is installed"
else
  echo "setup: installing Debian's cargo (rustup's is preferred: Debian's may be too old for prost)"
  apt_install cargo
fi

# Python (conformance/ports/python): a virtual environment with the pinned
# protobuf runtime that matches Debian's protoc 3.21.12.
if [[ -f conformance/ports/python/requirements.txt ]]; then
  venv=conformance/ports/python/.venv
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup: creating $venv"
    python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -m pip install -q -r conformance/ports/python/requirements.txt \
      >/dev/null; then
    echo "setup: pip install failed" >&2
    exit 1
  fi
  # Mutation testing of the port (tools/mutation.sh): mutmut, pinned.
  if ! "$venv/bin/python" -m pip install -q -r conformance/ports/python/requirements-mutation.txt \
      >/dev/null; then
    echo "setup: pip install of mutmut failed" >&2
    exit 1
  fi
  echo "setup: $venv has $(conformance/ports/python/.venv/bin/python -m pip list 2>/dev/null | grep -E '^(protobuf|pytest|numpy|mutmut) ' | tr -s ' ' | paste -sd, -)"
fi

# Attention from a real model (tools/capture_attention.py and its test):
# torch and transformers from PyPI, pinned, in their own virtual
# environment. PyPI's torch is the CUDA build: about 5.6 GB, 2-3 minutes
# to download and install here; the capture itself runs on CPU.
venv=tools/.venv-capture
if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip install -q -r tools/requirements-capture.txt >/dev/null; then
  echo "setup: pip install of tools/requirements-capture.txt failed" >&2
  exit 1
fi
echo "setup: $venv has $("$venv/bin/python" -m pip list 2>/dev/null | grep -E '^(torch|transformers|safetensors) ' | tr -s ' ' | paste -sd, -)"

# kvpress against the vectors (tools/kvpress_check.sh): NVIDIA kvpress 0.5.5
# with the torch and transformers it resolves, and the Python port's protobuf
# runtime, pinned, in their own virtual environment. Again PyPI's CUDA torch:
# about 5.9 GB, about 2 minutes to download and install here; the check runs
# on CPU. Skipped when the venv was installed from the same requirements
# (a copy of them is kept in the venv once pip succeeds).
venv=tools/.venv-kvpress
if [[ -x "$venv/bin/python" ]] && cmp -s tools/requirements-kvpress.txt "$venv/requirements-kvpress.txt"; then
  echo "setup: $venv is installed (tools/requirements-kvpress.txt unchanged)"
else
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup: creating $venv"
    python3 -m venv "$venv"
  fi
  if ! "$venv/bin/python" -m pip install -q -r tools/requirements-kvpress.txt >/dev/null; then
    echo "setup: pip install of tools/requirements-kvpress.txt failed" >&2
    exit 1
  fi
  cp tools/requirements-kvpress.txt "$venv/requirements-kvpress.txt"
  echo "setup: $venv has $("$venv/bin/python" -m pip list 2>/dev/null | grep -E '^(kvpress|torch|transformers|protobuf) ' | tr -s ' ' | paste -sd, -)"
fi

# Mutation testing of the Rust port (tools/mutation.sh): cargo-mutants,
# pinned, built from crates.io (a few minutes on two cores, once).
if command -v cargo >/dev/null; then
  if cargo mutants --version 2>/dev/null | grep -q "^cargo-mutants 27.1.0$"; then
    echo "setup: $(cargo mutants --version) is installed"
  else
    echo "setup: installing cargo-mutants 27.1.0 (cargo install --locked)"
    cargo install -q --locked cargo-mutants --version 27.1.0
  fi
fi
echo "setup: done"
