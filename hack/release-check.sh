#!/usr/bin/env bash
# `make release-check`: is the release in DIST reproducible? Its commit is cloned afresh into
# another directory and released from there, later, and the two SHA256SUMS are compared. The
# second release compiles into this checkout's target/ (the same remapped paths): the
# dependencies compiled by the first are reused, this crate is compiled again (its artifacts
# removed first), and the image and every archive are made again. With FULL=1 it compiles
# into an empty target directory of its own instead, every crate again under another path.
# On a difference, the files that differ and, for the binary, the first differing bytes and
# any path of either checkout it holds. Prints both times and the second build's duration.
# usage: hack/release-check.sh DIST
set -euo pipefail
dist=$(cd "${1:?usage: hack/release-check.sh DIST}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd -P)
log() { echo "release-check: $*" >&2; }
die() { log "$*"; exit 1; }
[ -f "$dist/SHA256SUMS" ] || die "$dist has no SHA256SUMS: make release VERSION=... first"
read_statement() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$dist/provenance.intoto.json" "$1"; }
repo=$(read_statement 's["subject"][0]["name"]')
version=$(read_statement 's["predicate"]["buildDefinition"]["externalParameters"]["version"]')
commit=$(read_statement 's["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"]')
first=$(stat -c %Y "$dist/SHA256SUMS")

other=$(mktemp -d "${TMPDIR:-/tmp}/image-reflector-release-check.XXXXXX")
# The second release stays for a look when it differs (its path is printed).
trap 'rm -rf "$other/checkout" "$other/target"; [ -d "$other/dist" ] || rm -rf "$other"' EXIT
git clone --quiet --no-hardlinks "$root" "$other/checkout"
git -C "$other/checkout" -c advice.detachedHead=false checkout --quiet --detach "$commit"
if [ "${FULL:-}" = 1 ]; then
  target=$other/target
else
  target=$root/target
  # This crate's own artifacts go, so it is compiled again from the clone, not taken as fresh.
  (cd "$other/checkout" && CARGO_TARGET_DIR=$target cargo clean --quiet --release -p image-reflector)
fi
# The platforms DIST has binaries of.
platforms=$(cd "$dist" && ls image-reflector-linux-* | sed 's#^image-reflector-linux-#linux/#' | paste -sd ' ')
started=$(date +%s)
log "releasing $version ($commit) again in $other/checkout, $((started - first)) s after the first"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL RELEASE_TARGET_DIR="$target" PLATFORMS="$platforms" make -C "$other/checkout" --no-print-directory release VERSION="$version" REGISTRY="${repo%/image-reflector}" \
  DIST="$other/dist" >"$other/release.log" 2>&1 || { tail -n 40 "$other/release.log" >&2; die "the second release failed"; }
log "the second release took $(( $(date +%s) - started )) s"

if diff -u "$dist/SHA256SUMS" "$other/dist/SHA256SUMS" >&2; then
  log "reproducible: every file of $version is the same byte for byte ($(wc -l < "$dist/SHA256SUMS") files, image $(grep -oE '@sha256:[0-9a-f]{64}' "$dist/install.yaml" | head -1 | cut -c2-))"
  rm -rf "$other/dist"
  exit 0
fi
bin=image-reflector-linux-amd64
if ! cmp -s "$dist/$bin" "$other/dist/$bin"; then
  log "the binaries differ; first bytes:"
  cmp -l "$dist/$bin" "$other/dist/$bin" | head -n 5 >&2 || true
  log "paths of either checkout in them:"
  grep -a -o -e "$root[^[:cntrl:]]*" -e "$other[^[:cntrl:]]*" "$dist/$bin" "$other/dist/$bin" | sort -u | head -n 10 >&2 || true
fi
die "not reproducible: the files above differ between $dist and a second build of $commit, kept in $other/dist"
