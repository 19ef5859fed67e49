# Sourced: archive_uri prints the Debian archive URI this machine's apt already
# uses (never hard-coded in the repository), or nothing.
archive_uri() {
  local uri=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    uri=$(awk '/^URIs:/ {for (i=2;i<=NF;i++) print $i}' /etc/apt/sources.list.d/*.sources |
      grep -E '/debian/?$' | head -n1 || true)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" {for (i=2;i<=NF;i++) if ($i ~ /^(https?|file|ftp):/) {print $i; break}}' \
      /etc/apt/sources.list | grep -E '/debian/?$' | head -n1 || true)
  fi
  printf '%s' "$uri"
}
