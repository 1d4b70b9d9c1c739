#!/bin/bash
# Shows that the vectors are the same bytes whatever compiles the reference:
# builds the vector generator outside Bazel with g++ and clang++, at -O0 and
# -O3, with and without -march=native (always with -ffp-contract=off and no
# fast-math, as spec/arithmetic.md requires), regenerates vectors/ with each
# build, and compares every file with the committed vectors/.
#
#   tools/determinism.sh          # 4 builds; prints a markdown table; exit 1 on any diff
#   tools/determinism.sh --full   # all 8 builds (compiler x level x -march)
#
# The 4 builds (what tools/test.sh runs) are a half of the 2 x 2 x 2 matrix
# in which every pair of settings occurs once: each compiler at each level,
# each compiler with and without -march=native, each level with and without
# it (g++ -O0, g++ -O3 -march=native, clang++ -O0 -march=native, clang++
# -O3). A difference that needs one setting, or two together, shows in it;
# one that needs all three at once only in --full.
#
# Needs g++ and clang++ (Debian's clang); installs clang if missing.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
full=0
case "${1:-}" in
  "") ;;
  --full) full=1 ;;
  *) echo "usage: tools/determinism.sh [--full]" >&2; exit 2 ;;
esac

if ! command -v clang++ >/dev/null; then
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  echo "determinism: installing clang" >&2
  "${sudo[@]}" apt-get install -y -qq clang >/dev/null || exit 2
fi

command -v pkg-config >/dev/null || { echo "determinism: needs pkg-config (tools/setup.sh installs it)"; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
protoc --proto_path=. --cpp_out="$work" spec/kvspec.proto || exit 2

sources=(
  cc/errors.cc cc/text.cc cc/rng.cc cc/spans.cc cc/policy.cc cc/registry.cc
  cc/harness.cc cc/kept_sets.cc cc/scenario_checks.cc cc/heads.cc cc/precision.cc
  cc/presets.cc cc/trace.cc cc/proto_convert.cc cc/sha256.cc cc/elementary.cc
  cc/policies/full.cc cc/policies/window.cc cc/policies/streamingllm.cc
  cc/policies/h2o.cc cc/policies/tova.cc cc/policies/snapkv.cc
  cc/policies/random.cc cc/policies/openvino.cc cc/policies/knorm.cc
  cc/policies/keydiff.cc cc/policies/lagkv.cc cc/policies/simlayerkv.cc
  tools/vectors/flags.cc tools/vectors/features.cc tools/vectors/bounds.cc
  tools/vectors/case_builder.cc tools/vectors/cases.cc tools/vectors/cases_audit.cc
  tools/vectors/cases_decode.cc tools/vectors/cases_heads.cc tools/vectors/cases_prefill.cc
  tools/vectors/cases_search.cc tools/vectors/cases_spans.cc tools/vectors/cases_totals.cc
  tools/vectors/cases_triggers.cc
  tools/vectors/cases_blocks.cc tools/vectors/cases_openvino.cc tools/vectors/cases_knorm.cc
  tools/vectors/cases_keydiff.cc tools/vectors/cases_lagkv.cc tools/vectors/cases_pyramidkv.cc
  tools/vectors/cases_simlayerkv.cc
  tools/vectors/combination_cases.cc tools/vectors/case_id.cc tools/vectors/generate.cc
  tools/vectors/markdown_block.cc tools/vectors/regen_vectors.cc tools/files/files.cc
  "$work/spec/kvspec.pb.cc"
)
# The list is kept by hand; Bazel's is the truth. A source the generator
# gained in its BUILD files and not here would fail to link (or, worse, a
# source left here would hide one): compare the two first.
if command -v bazel >/dev/null; then
  bazel_list="$(bazel query 'kind("source file", deps(//tools/vectors:regen_vectors))' 2>/dev/null |
                sed -n 's|^//\(.*\):\(.*\.cc\)$|\1/\2|p' | sed 's|^/||' | sort)"
  here="$(printf '%s\n' "${sources[@]}" | grep -v "^$work/" | sort)"
  if [[ -z "$bazel_list" ]]; then
    echo "determinism: bazel query of //tools/vectors:regen_vectors's sources failed"
    exit 1
  fi
  if [[ "$bazel_list" != "$here" ]]; then
    echo "determinism: tools/determinism.sh's sources differ from Bazel's for //tools/vectors:regen_vectors:"
    diff <(echo "$bazel_list") <(echo "$here") | sed -n 's/^< /  missing here: /p; s/^> /  not in Bazel: /p'
    exit 1
  fi
fi
libs="$(pkg-config --libs absl_statusor absl_str_format absl_flags_parse absl_strings) -lprotobuf -pthread"

printf '| compiler | optimisation | -march=native | files identical to vectors/ | MANIFEST.json SHA-256 |\n'
printf '| --- | --- | --- | --- | --- |\n'
failures=0
builds=0
ran=()
for compiler in g++ clang++; do
  version="$($compiler --version | head -1)"
  for opt in -O0 -O3; do
    for march in "" "-march=native"; do
      # The half matrix: -march=native where exactly one of (clang++, -O3).
      if [[ $full -eq 0 ]]; then
        one=0; [[ $compiler == clang++ ]] && one=$((one + 1)); [[ $opt == -O3 ]] && one=$((one + 1))
        if [[ $one -eq 1 && -z "$march" ]] || [[ $one -ne 1 && -n "$march" ]]; then continue; fi
      fi
      builds=$((builds + 1))
      name="$compiler$opt${march:+-native}"
      build="$work/$name"
      mkdir -p "$build/obj" "$build/root/spec"
      cp spec/vectors.md spec/features.md "$build/root/spec/"
      flags=(-std=c++17 -ffp-contract=off -fno-fast-math $opt $march
             -I"$repo" -I"$work" -w)
      # Compile in parallel on every core, then link.
      printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
        "$compiler ${flags[*]} -c {} -o $build/obj/\$(echo {} | tr / _).o" \
        || { echo "| $version | $opt | ${march:-no} | build failed | |"; failures=$((failures+1)); continue; }
      $compiler "$build"/obj/*.o $libs -o "$build/regen" \
        || { echo "| $version | $opt | ${march:-no} | link failed | |"; failures=$((failures+1)); continue; }
      # The control below reuses this build's objects outside cc/.
      [[ "$name" == "g++-O3-native" ]] || rm -rf "$build/obj"
      # The generator runs on one core while the next build compiles on
      # the others; its row (and a "failed" mark) waits in $build.
      (
        native="no"; [[ -n "$march" ]] && native="yes"
        if ! "$build/regen" --root="$build/root" >/dev/null; then
          echo "| $version | $opt | $native | generator failed | |" >"$build/row"
          touch "$build/failed"; exit
        fi
        if diff -r -q "$build/root/vectors" vectors >/dev/null; then
          same="yes ($(ls vectors | wc -l) files)"
        else
          same="**NO**: $(diff -r -q "$build/root/vectors" vectors | wc -l) differ"
          touch "$build/failed"
        fi
        digest="$(sha256sum "$build/root/vectors/MANIFEST.json" | cut -c1-16)"
        printf '| %s | %s | %s | %s | `%s...` |\n' "$version" "$opt" "$native" "$same" "$digest" \
          >"$build/row"
      ) &
      ran+=("$build")
    done
  done
done

# Control: the reference (cc/) built with FMA contraction allowed, which
# spec/arithmetic.md forbids, linked with the g++ -O3 -march=native build's
# other objects (the case builders, the generator, the protobuf classes). If
# its vectors differ, the comparison above is not vacuous: the rule the build
# flags enforce does change bits. (Compiling only cc/ halves its compile.)
build="$work/control"
mkdir -p "$build/obj" "$build/root/spec"
cp spec/vectors.md spec/features.md "$build/root/spec/"
if [[ -d "$work/g++-O3-native/obj" ]]; then
  cp "$work/g++-O3-native/obj/"*.o "$build/obj/"
  rm -rf "$work/g++-O3-native/obj"
fi
flags=(-std=c++17 -ffp-contract=fast -O3 -march=native -I"$repo" -I"$work" -w)
printf '%s\n' "${sources[@]}" | grep '^cc/' | xargs -P "$(nproc)" -I{} sh -c \
  "g++ ${flags[*]} -c {} -o $build/obj/\$(echo {} | tr / _).o"
g++ "$build"/obj/*.o $libs -o "$build/regen" && "$build/regen" --root="$build/root" >/dev/null
differing="$(diff -r -q "$build/root/vectors" vectors | wc -l)"
wait
for build in "${ran[@]}"; do
  cat "$build/row" 2>/dev/null || echo "| $build | | | no result (the run died) | |"
  [[ -f "$build/row" && ! -f "$build/failed" ]] || failures=$((failures+1))
done
echo
echo "control (forbidden): g++ -O3 -march=native -ffp-contract=fast: $differing of $(ls vectors | wc -l) files differ"
echo
echo "determinism: $((builds - failures)) passed, $failures failed"
exit $(( failures == 0 ? 0 : 1 ))
