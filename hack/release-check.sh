#!/usr/bin/env bash
# `make release-check`: is the release in DIST reproducible? Its commit is cloned afresh into
# another directory and released from there, later, and the two SHA256SUMS are compared. The
# release builds at its one build place (RELEASE_BUILD_DIR), whose compiled dependencies it
# reuses: the crate, the image and every archive are made again. With FULL=1 the second
# release builds at another build place, empty, so every crate is compiled again under other
# paths (about twice as long: docs/release.md). On a difference, the files that differ and, for the binary, the
# first differing bytes and any path of this machine it holds. Prints both times and the
# build's duration.
# usage: hack/release-check.sh DIST
set -euo pipefail
dist=$(cd "${1:?usage: hack/release-check.sh DIST}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "release-check: $*" >&2; }
die() { log "$*"; exit 1; }
[ -f "$dist/SHA256SUMS" ] || die "$dist has no SHA256SUMS: make release VERSION=... first"
read_statement() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$dist/provenance.intoto.json" "$1"; }
repo=$(read_statement 's["subject"][0]["name"]')
version=$(read_statement 's["predicate"]["buildDefinition"]["externalParameters"]["version"]')
commit=$(read_statement 's["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"]')
first=$(stat -c %Y "$dist/SHA256SUMS")

other=$(mktemp -d "${TMPDIR:-/tmp}/image-reflector-release-check.XXXXXX")
trap 'rm -rf "$other"' EXIT
git clone --quiet --no-hardlinks "$root" "$other/checkout"
git -C "$other/checkout" checkout --quiet --detach "$commit"
build=()
[ "${FULL:-}" != 1 ] || build=(RELEASE_BUILD_DIR="$other/build")
started=$(date +%s)
log "releasing $version ($commit) again in $other/checkout, $((started - first)) s after the first"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${build[@]}" make -C "$other/checkout" --no-print-directory release VERSION="$version" REGISTRY="${repo%/image-reflector}" \
  DIST="$other/dist" >"$other/release.log" 2>&1 || { tail -n 40 "$other/release.log" >&2; die "the second release failed"; }
log "the second release took $(( $(date +%s) - started )) s"

if diff -u "$dist/SHA256SUMS" "$other/dist/SHA256SUMS" >&2; then
  log "reproducible: every file of $version is the same byte for byte ($(wc -l < "$dist/SHA256SUMS") files, image $(grep -o 'sha256:[0-9a-f]*' "$dist/install.yaml" | head -1))"
  exit 0
fi
bin=image-reflector-linux-amd64
if ! cmp -s "$dist/$bin" "$other/dist/$bin"; then
  log "the binaries differ; first bytes:"
  cmp -l "$dist/$bin" "$other/dist/$bin" | head -n 5 >&2 || true
  log "paths of either checkout in them:"
  grep -a -o -e "$root[^[:cntrl:]]*" -e "$other[^[:cntrl:]]*" "$dist/$bin" "$other/dist/$bin" | sort -u | head -n 10 >&2 || true
fi
die "not reproducible: the files above differ between $dist and a second build of $commit"
