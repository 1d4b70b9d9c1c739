#!/bin/bash
# Standalone build of OpenVINO GenAI's cache eviction (commit da1db864d2bc, files identical to tag 2026.3.0.0)
# against the headers and libopenvino.so.2630 of the PyPI wheel openvino==2026.3.0, then upstream's own unit
# tests (tests/cpp/cache_eviction.cpp: 117 passed, 2026-12-04) and the probes beside this script.
# A research aid for ../../openvino-genai-2026.3.0.md, not a test kvspec runs. Set up beside it first
# (git ignores both):
#   src/       git --git-dir=<the openvino.genai snapshot from the search tool's fetch> archive da1db864d2bc | tar -x -C src
#   wheel/ov/  pip download openvino==2026.3.0 --no-deps -d wheel && unzip -q wheel/openvino-2026.3.0-*.whl -d wheel/ov
# Needs g++ and libgtest-dev (Debian), and /usr/src/googletest for gmock.
set -euo pipefail
cd "$(dirname "$0")"
S=src/src/cpp; OV=wheel/ov/openvino; G=/usr/src/googletest
mkdir -p build
CXX="g++ -std=c++17 -O1"
$CXX -c -I$S/src -I$S/include -I$OV/include $S/src/continuous_batching/cache/cache_eviction.cpp -o build/cache_eviction.o
$CXX -c -I$S/src -I$S/include -I$OV/include $S/src/continuous_batching/cache/kvcrush.cpp -o build/kvcrush.o
$CXX -c -I$S/src -I$S/include -I$OV/include -I$G/googlemock/include -I$G/googletest/include src/tests/cpp/cache_eviction.cpp -o build/test.o
$CXX -c -I$G/googlemock/include -I$G/googlemock -I$G/googletest/include $G/googlemock/src/gmock-all.cc -o build/gmock-all.o
g++ -o build/cache_eviction_test build/test.o build/cache_eviction.o build/kvcrush.o build/gmock-all.o \
  /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/x86_64-linux-gnu/libgtest_main.a \
  $OV/libs/libopenvino.so.2630 -Wl,-rpath,$(pwd)/$OV/libs -lpthread
# the POC rotation test reads tests/cpp/data/ relative to the working directory
(cd src && ../build/cache_eviction_test)
for probe in probe probe2 probe3; do
  $CXX -I$S/src -I$S/include -I$OV/include $probe.cpp build/cache_eviction.o build/kvcrush.o \
    $OV/libs/libopenvino.so.2630 -Wl,-rpath,$(pwd)/$OV/libs -o build/$probe
  ./build/$probe > build/$probe.out
  diff -u $probe.out build/$probe.out && echo "$probe: as recorded in $probe.out"
done
# Probe 4: the note's proposed card against CacheEvictionAlgorithm on random runs.
$CXX -I$S/src -I$S/include -I$OV/include probe4.cpp build/cache_eviction.o build/kvcrush.o \
  $OV/libs/libopenvino.so.2630 -Wl,-rpath,$(pwd)/$OV/libs -o build/probe4
python3 probe4.py 3000 build/probe4 > build/probe4.out
diff -u probe4.out build/probe4.out && echo "probe4: as recorded in probe4.out"
# and each planted error in the proposed card is caught (probe4_mutants.sh)
./probe4_mutants.sh build/probe4
