#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in build-fuzz/ with clang, ASan
# and UBSan, and runs one of them.
#
#   scripts/fuzz.sh TARGET [SECONDS] [-- LIBFUZZER_ARGS...]
#       TARGET: metalayer | frame | container | s3_xml | azure_xml | autoindex | vlen |
#       zip_directory | embed_map | json; SECONDS defaults to 60.
#   scripts/fuzz.sh --smoke       every target for 20 s, one after the other
#   scripts/fuzz.sh --build-only  just configure and build
#   scripts/fuzz.sh --list        the targets
#
# Corpus: new inputs go to build-fuzz/corpus-TARGET/ (kept between runs, not
# committed); the committed seeds (tests/fuzz/corpus/TARGET/) and the fixture
# sets (`b2nd_fixture make` and `hostile`, generated once into
# build-fuzz/seeds/) are read only. Crashes, leaks, timeouts and out-of-memory
# inputs are written to build-fuzz/artifacts-TARGET/; replay one with
#   build-fuzz/tests/fuzz/fuzz_TARGET FILE      (or the fuzz_TARGET_replay of any build)
# and, when it is a b2ndfs bug, keep it in tests/fuzz/crashes/TARGET/.
#
# The build holds the libFuzzer targets, b2nd_fixture and fuzz_corpus_tool
# (for the seeds) only: a fuzz_TARGET binary replays a FILE given to it, and
# the fuzz_TARGET_replay programs are in every ctest build tree. Compiles go
# through ccache when it is installed (scripts/lib/ccache.sh).
# Environment: FUZZ_BUILD (default ROOT/build-fuzz), CC/CXX (default clang),
# FUZZ_JOBS (build parallelism, default 2); FUZZ_NO_BUILD=1: TARGET runs
# without the build step (after --build-only; runs of several targets at once
# then do not start ninja on the same tree together).
# Exit status: 0 when no target found anything, 1 when one did, 2 on usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
TARGETS=(metalayer frame container s3_xml azure_xml autoindex vlen zip_directory embed_map json)

# usage [STATUS]: the comment above, then exit (2 unless told).
usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-2}"
}

max_len_of() {
  case $1 in
    metalayer) echo $((64 * 1024)) ;;
    *) echo $((1024 * 1024)) ;;
  esac
}

is_target() {
  local t
  for t in "${TARGETS[@]}"; do [[ $t == "$1" ]] && return 0; done
  return 1
}

build() {
  if ! command -v "${CXX:-clang++}" >/dev/null; then
    echo "fuzz.sh: ${CXX:-clang++} not found (libFuzzer needs clang)" >&2
    exit 2
  fi
  if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    # shellcheck source=lib/ccache.sh
    source "$ROOT/scripts/lib/ccache.sh"
    ccache_setup "$ROOT"
    # -O1 and line tables only, as OSS-Fuzz builds fuzz targets: findings
    # still name their lines, and the tree compiles faster. Unity batches,
    # as every tree the scripts configure (B2NDFS_UNITY in CMakeLists.txt).
    CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$ROOT" -B "$BUILD" -G Ninja "${CCACHE_LAUNCHER[@]}" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DB2NDFS_FUZZ=ON -DB2NDFS_SANITIZE=ON -DB2NDFS_UNITY=ON \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
  fi
  local targets=(b2nd_fixture fuzz_corpus_tool)
  local t
  for t in "${TARGETS[@]}"; do targets+=("fuzz_$t"); done
  cmake --build "$BUILD" -j "${FUZZ_JOBS:-2}" --target "${targets[@]}"
  # The fixture sets, once: the fuzzers' starting point besides the seeds.
  local seeds=$BUILD/seeds
  if [[ ! -f $seeds/.done ]]; then
    rm -rf "$seeds"
    "$BUILD/tests/fixtures/b2nd_fixture" make "$seeds/valid" "$seeds/ref" >/dev/null
    "$BUILD/tests/fixtures/b2nd_fixture" hostile "$seeds/hostile" \
      --manifest "$seeds/hostile.tsv" >/dev/null
    "$BUILD/tests/fuzz/fuzz_corpus_tool" prepare "$seeds/derived" "$seeds/valid" \
      "$seeds/hostile" >/dev/null
    touch "$seeds/.done"
  fi
}

# Sanitizer reports name functions and lines only through llvm-symbolizer
# (Debian's llvm-14 installs it with a version suffix; setup.sh installs it).
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} ]]; then
  for s in llvm-symbolizer llvm-symbolizer-14 /usr/lib/llvm-14/bin/llvm-symbolizer; do
    if command -v "$s" >/dev/null; then
      export ASAN_SYMBOLIZER_PATH
      ASAN_SYMBOLIZER_PATH=$(command -v "$s")
      break
    fi
  done
  [[ -n ${ASAN_SYMBOLIZER_PATH:-} ]] ||
    echo "fuzz.sh: no llvm-symbolizer found: findings will show addresses, not lines" >&2
fi

# run TARGET SECONDS [libFuzzer args...]
run() {
  local t=$1 seconds=$2
  shift 2
  local seeds=$BUILD/seeds corpus=$BUILD/corpus-$t artifacts=$BUILD/artifacts-$t
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus" "$ROOT/tests/fuzz/corpus/$t")
  case $t in
    metalayer) dirs+=("$seeds/derived/metalayer") ;;
    frame) dirs+=("$seeds/valid" "$seeds/hostile") ;;
    container) dirs+=("$seeds/valid" "$seeds/hostile" "$seeds/derived/container") ;;
  esac
  echo "== fuzz_$t for ${seconds} s (new corpus: $corpus, findings: $artifacts/)"
  local rc=0
  # -close_fd_mask=2: the store logs every broken input to stderr; libFuzzer
  # and the sanitizers keep their own copy of stderr for reports, and
  # FUZZ_CHECK writes to one too.
  "$BUILD/tests/fuzz/fuzz_$t" "${dirs[@]}" \
    -dict="$ROOT/tests/fuzz/b2nd.dict" \
    -max_total_time="$seconds" -max_len="$(max_len_of "$t")" \
    -rss_limit_mb=2048 -timeout=25 -close_fd_mask=2 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" || rc=$?
  if ((rc != 0)); then
    echo "== fuzz_$t FOUND A PROBLEM (exit $rc); inputs in $artifacts/:" >&2
    ls -l "$artifacts" >&2 || true
  fi
  return "$rc"
}

[[ $# -ge 1 ]] || usage
case $1 in
  -h | --help) usage 0 ;;
  --list)
    printf '%s\n' "${TARGETS[@]}"
    exit 0
    ;;
  --build-only)
    build
    exit 0
    ;;
  --smoke)
    build
    failed=()
    for t in "${TARGETS[@]}"; do
      run "$t" 20 || failed+=("$t")
    done
    if ((${#failed[@]} > 0)); then
      echo "fuzz.sh --smoke: findings in: ${failed[*]}" >&2
      exit 1
    fi
    echo "fuzz.sh --smoke: no findings"
    exit 0
    ;;
esac

target=$1
shift
is_target "$target" || {
  echo "fuzz.sh: unknown target '$target' (one of: ${TARGETS[*]})" >&2
  exit 2
}
seconds=60
if [[ $# -gt 0 && $1 != -- ]]; then
  seconds=$1
  shift
fi
[[ $seconds =~ ^[0-9]+$ ]] || {
  echo "fuzz.sh: SECONDS must be a whole number" >&2
  exit 2
}
[[ $# -gt 0 && $1 == -- ]] && shift
[[ ${FUZZ_NO_BUILD:-0} == 1 ]] || build
run "$target" "$seconds" "$@" || exit 1
