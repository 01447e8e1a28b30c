#!/usr/bin/env bash
# make sigtools: builds the signing tools the signature tests run (the cosign CLI v3 and the last
# v2, the notation CLI), a registry that serves the OCI referrers API, the reference verifiers'
# judge (sigstore-go, notation-go; tests/sigtools/judge), cel-go as the conditions' judge
# (tests/sigtools/celjudge) and Sigstore's services cosign signs
# through (Rekor v2, rekor-tiles' POSIX server; Rekor v1 over an in-memory Trillian of ours; the
# timestamp authority; Fulcio), each pinned in
# tests/sigtools/<tool>/go.mod, through the Go module proxy, into SIGTOOLS_BIN_DIR (outside the
# work tree). Static, stripped; a stamp per tool makes a second run a no-op until its pin, the
# flags or the Go version change. None of the modules carries a replace directive, so each go.mod
# of ours names the main package in a `tool` directive and `go build` builds it as pinned.
#
#   hack/sigtools-build.sh           build what is stale; print SIGTOOLS_BIN_DIR on stdout
#   hack/sigtools-build.sh versions  print "tool version" lines and nothing else
#
# SIGTOOLS (binary names of the list below, e.g. `cosign` for make release-push) builds only
# those.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIGTOOLS_BIN_DIR=${SIGTOOLS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-sigtools/bin}
# directory under tests/sigtools -> binary name
TOOLS="cosign:cosign cosign-v2:cosign-v2 notation:notation registry:referrers-registry judge:signature-judge celjudge:cel-judge rekor:rekor-server tsa:timestamp-server fulcio:fulcio tufrepo:tufrepo trillian:trillian rekor-v1:rekor-v1-server"
if [ -n "${SIGTOOLS:-}" ]; then
  chosen=""
  for b in $SIGTOOLS; do
    t=$(for t in $TOOLS; do [ "${t#*:}" != "$b" ] || echo "$t"; done)
    [ -n "$t" ] || { echo "sigtools-build: SIGTOOLS: $b is not one of: $(for t in $TOOLS; do printf '%s ' "${t#*:}"; done)" >&2; exit 1; }
    chosen+=" $t"
  done
  TOOLS=${chosen# }
fi
log() { echo "sigtools-build: $*" >&2; }
die() { log "$*"; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go 1.26 or later (the signing tools are built from Go modules)"
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# The main package a go.mod of ours builds: its `tool` directive, or its own directory.
pkg_of() { sed -n 's/^tool \(.*\)$/\1/p' "$1/go.mod" | head -1 | grep . || echo .; }
version_of() {
  local pkg; pkg=$(pkg_of "$1")
  if [ "$pkg" = . ]; then
    # A program of ours: its direct requirements' versions, on one line.
    local direct; direct=$(sed -n '/^require/,/^)/p' "$1/go.mod" | grep -v indirect \
      | sed -E 's/^require[[:space:]]*\(?//' | awk 'NF >= 2 { print $1 }' | sort -u)
    # shellcheck disable=SC2086 # one argument per module
    (cd "$1" && go list -m -f '{{.Path}}@{{.Version}}' $direct | paste -sd ' ')
  else
    (cd "$1" && go list -m -f '{{.Version}}' "$(go list -e -f '{{.Module.Path}}' "$pkg")")
  fi
}

if [ "${1:-}" = versions ]; then
  for t in $TOOLS; do echo "${t#*:} $(version_of "$ROOT/tests/sigtools/${t%%:*}")"; done
  exit 0
fi

mkdir -p "$SIGTOOLS_BIN_DIR"
for t in $TOOLS; do
  dir=${t%%:*} bin=${t#*:}
  mod=$ROOT/tests/sigtools/$dir
  pkg=$(pkg_of "$mod")
  version=$(version_of "$mod")
  ldflags="-s -w"
  stamp=$( { cat "$mod"/go.mod "$mod"/go.sum "$mod"/*.go 2>/dev/null; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)
  if [ "$(cat "$SIGTOOLS_BIN_DIR/.$bin.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$SIGTOOLS_BIN_DIR/$bin" ]; then
    log "$bin $version is built"
    continue
  fi
  log "building $bin $version into $SIGTOOLS_BIN_DIR"
  start=$(date +%s)
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$SIGTOOLS_BIN_DIR/.$bin.new" "$pkg")
  mv -f "$SIGTOOLS_BIN_DIR/.$bin.new" "$SIGTOOLS_BIN_DIR/$bin"
  echo "$stamp" > "$SIGTOOLS_BIN_DIR/.$bin.stamp"
  log "built $bin $version in $(( $(date +%s) - start )) s"
done
echo "$SIGTOOLS_BIN_DIR"
