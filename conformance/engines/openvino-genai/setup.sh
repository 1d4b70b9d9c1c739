#!/bin/bash
# Builds the openvino-genai adapter: its virtual environment (.venv, from
# requirements.txt: the openvino 2026.3.0 wheel, numpy, protobuf) and
# build/ov_evict, GenAI's own cache eviction (cache_eviction.cpp and
# kvcrush.cpp of release 2026.3.0.0) compiled with ov_evict.cc against the
# wheel's headers and libopenvino.so.2630.
#
#   KVSPEC_OPENVINO_GENAI_SRC=<a checkout of openvinotoolkit/openvino.genai
#     at tag 2026.3.0.0> conformance/engines/openvino-genai/setup.sh
#
# GenAI's sources are not part of kvspec and PyPI has none (its wheels ship
# the compiled library, not the headers of CacheEvictionAlgorithm), so the
# checkout is the user's. The six files compiled or included are checked
# against the hashes below (those of the tag) before anything is built;
# nothing is downloaded but the wheels. About 1 minute the first time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${KVSPEC_OPENVINO_GENAI_SRC:-}
if [[ -z "$src" || ! -d "$src/src/cpp" ]]; then
  echo "setup: set KVSPEC_OPENVINO_GENAI_SRC to a checkout of openvinotoolkit/openvino.genai at tag 2026.3.0.0 (got '${src}')" >&2
  exit 1
fi
while read -r sum file; do
  got=$(sha256sum "$src/$file" 2>/dev/null | cut -d' ' -f1 || true)
  if [[ "$got" != "$sum" ]]; then
    echo "setup: $src/$file is not the file of GenAI 2026.3.0.0 (sha256 ${got:-missing}, want $sum)" >&2
    exit 1
  fi
done <<'SUMS'
7eb8319b8b94a6f0c30392b998d9f07038d3885a72becbbe26aedbeff75a50f8  src/cpp/src/continuous_batching/cache/cache_eviction.cpp
1496bd378b50b8f6e82dd10190c3c318d5e817b739952e2faee06d3bc7dcbf4e  src/cpp/src/continuous_batching/cache/cache_eviction.hpp
423bd7e2aa6fe8ec0529ea825b213523987dea2b73dbc940cd4391a10227ab3d  src/cpp/include/openvino/genai/cache_eviction.hpp
55f6ea511a5a7dd4f8518985be7115939d8c34da11a08d2a1cf65cc0ba4bfa63  src/cpp/src/continuous_batching/cache/kvcrush.cpp
9fe484d624901d1b96c0af62c42eb84ebc1e4e170245c81e30c47eb5a556d4dd  src/cpp/src/continuous_batching/cache/kvcrush.hpp
06e9bbb6057a0e0e49c55b0fb1e174b29774728a664c5bf9d4e0f39f1d37fb85  src/cpp/src/continuous_batching/attention_output.hpp
SUMS
venv="$here/.venv"
stamp="$venv/requirements.txt"
if ! [[ -x "$venv/bin/python" ]] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi
ov=$("$venv/bin/python" -c 'import os, openvino; print(os.path.dirname(openvino.__file__))')
lib=$(ls "$ov"/libs/libopenvino.so.* | head -1)
cpp="$src/src/cpp"
mkdir -p "$here/build"
g++ -std=c++17 -O1 -I"$cpp/src" -I"$cpp/include" -I"$ov/include" \
  "$here/ov_evict.cc" "$cpp/src/continuous_batching/cache/cache_eviction.cpp" \
  "$cpp/src/continuous_batching/cache/kvcrush.cpp" \
  "$lib" -Wl,-rpath,"$(dirname "$lib")" -lpthread -o "$here/build/ov_evict.tmp"
mv "$here/build/ov_evict.tmp" "$here/build/ov_evict"
echo "setup: built $here/build/ov_evict (GenAI 2026.3.0.0 from $src, $(basename "$lib"))"
