# shellcheck shell=bash
# Sourced: where the scripts keep what outlives a clone, so that a fresh
# clone (and check_minbase.sh's minimal root, which binds each in at the same
# path) does not build or install it again: the compiler cache
# (scripts/lib/ccache.sh) and the installed npm packages (scripts/setup.sh).
#
#   kept_cache_dir NAME  prints /var/cache/b2ndfs-NAME as root, else
#                        ${XDG_CACHE_HOME:-~/.cache}/b2ndfs-NAME
kept_cache_dir() {
  if [[ $(id -u) == 0 ]]; then
    echo "/var/cache/b2ndfs-$1"
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/b2ndfs-$1"
  fi
}
