#!/bin/bash
# Makes the llama.cpp adapter's own virtual environment, .venv next to this
# script, from requirements.txt (every version pinned), then writes the tiny
# test model into .venv/kvspec-models/ with make_tiny.py. Idempotent: skips
# pip when .venv was installed from the same requirements.txt (a copy is kept
# in .venv once pip succeeds, as mlx-lm/setup.sh does), and the model when it
# exists and make_tiny.py is unchanged.
#
# llama-cpp-python 0.3.36 has no binary wheel on PyPI: pip builds it from the
# sdist (llama.cpp 0c1e570 vendored), CPU only, with the flags the research
# build used (notes/llama.cpp-0c1e570.md, section D): about 21 minutes on 2
# cores. KVSPEC_LLAMA_CPP_WHEEL=path/to/llama_cpp_python-0.3.36-*.whl installs
# a wheel built that way instead (pip wheel --no-deps llama-cpp-python==0.3.36
# with the same CMAKE_ARGS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
requirements="$here/requirements.txt"
stamp="$venv/requirements.txt"
models="$venv/kvspec-models"
model="$models/tiny-llama-v4096.gguf"

if [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$stamp"; then
  echo "setup: $venv is installed (requirements.txt unchanged)"
else
  [[ -x "$venv/bin/python" ]] || { echo "setup: creating $venv"; python3 -m venv "$venv"; }
  pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
  if [[ -n "${KVSPEC_LLAMA_CPP_WHEEL:-}" ]]; then
    echo "setup: installing $KVSPEC_LLAMA_CPP_WHEEL"
    "${pip[@]}" --no-deps "$KVSPEC_LLAMA_CPP_WHEEL"
  else
    echo "setup: building llama-cpp-python 0.3.36 from its sdist (CPU only; about 21 minutes on 2 cores)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAVA_BUILD=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
      nice -n 10 "${pip[@]}" --no-deps --no-binary llama-cpp-python "llama-cpp-python==0.3.36"
  fi
  if ! "${pip[@]}" -r "$requirements" >/dev/null; then
    echo "setup: pip install -r $requirements into $venv failed" >&2
    exit 1
  fi
  cp "$requirements" "$stamp"
  rm -f "$model"
fi

if [[ -f "$model" ]] && cmp -s "$here/make_tiny.py" "$models/make_tiny.py"; then
  echo "setup: $model is written (make_tiny.py unchanged)"
else
  "$venv/bin/python" "$here/make_tiny.py" "$models"
  cp "$here/make_tiny.py" "$models/make_tiny.py"
  echo "setup: wrote $model"
fi
echo "setup: $venv has $("$venv/bin/python" -m pip list 2>/dev/null \
  | grep -iE '^(llama_cpp_python|gguf|protobuf) ' | tr -s ' ' | paste -sd, -)"
