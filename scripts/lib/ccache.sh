# shellcheck shell=bash
# Sourced: the compiler cache every build of the scripts shares (build.sh,
# test.sh's sanitizer trees, fuzz.sh, build_deb.sh's package build), kept
# outside the clone so that a fresh clone, and the minimal root of
# check_minbase.sh (which binds it in at the same path), compile only what
# changed since an earlier run.
#
#   ccache_setup ROOT  when ccache is installed (scripts/setup.sh installs it)
#                      and B2NDFS_CCACHE is not 0, exports
#                        CCACHE_DIR      unless set: /var/cache/b2ndfs-ccache as
#                                        root, else ${XDG_CACHE_HOME:-~/.cache}/
#                                        b2ndfs-ccache;
#                        CCACHE_BASEDIR  unless set: ROOT, so that paths in the
#                                        clone are hashed relative to the build
#                                        tree and a clone elsewhere hits;
#                        CCACHE_NOHASHDIR=1 (with -g, ccache would otherwise hash
#                                        the build directory's path);
#                        CCACHE_SLOPPINESS unless set: pch_defines,time_macros,
#                                        what ccache needs to cache compiles
#                                        that use a precompiled header (the
#                                        unit tests' in unity trees,
#                                        tests/CMakeLists.txt);
#                      and sets CCACHE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
#                      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) for cmake's first
#                      configuration of a tree; otherwise CCACHE_LAUNCHER=().
#                      CCACHE_STATE says which, in words, for logs.
#   ccache_count LOG   "N hits, M misses" of the compiles ccache logged in
#                      LOG (a build run with CCACHE_STATSLOG=LOG); empty
#                      without ccache or compiles.
# shellcheck source=kept_cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/kept_cache.sh"

CCACHE_LAUNCHER=()
CCACHE_STATE="no compiler cache"
ccache_setup() {
  local root=$1
  if [[ ${B2NDFS_CCACHE:-1} == 0 ]]; then
    CCACHE_STATE="no compiler cache (B2NDFS_CCACHE=0)"
    return 0
  fi
  if ! command -v ccache >/dev/null; then
    CCACHE_STATE="no compiler cache (ccache is not installed)"
    return 0
  fi
  [[ -n ${CCACHE_DIR:-} ]] || CCACHE_DIR=$(kept_cache_dir ccache)
  if ! mkdir -p "$CCACHE_DIR" 2>/dev/null || [[ ! -w $CCACHE_DIR ]]; then
    CCACHE_STATE="no compiler cache ($CCACHE_DIR is not writable)"
    unset CCACHE_DIR
    return 0
  fi
  export CCACHE_DIR
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  export CCACHE_NOHASHDIR=1
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
  CCACHE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CCACHE_STATE="compiler cache $CCACHE_DIR"
}

ccache_count() {
  [[ ${#CCACHE_LAUNCHER[@]} -gt 0 && -s $1 ]] || return 0
  awk '/^(direct|preprocessed)_cache_hit$/ { h++ } /^cache_miss$/ { m++ }
    END { if (h + m > 0) printf "%d hits, %d misses\n", h, m }' "$1"
}
