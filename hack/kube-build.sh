#!/usr/bin/env bash
# make kube: builds the Kubernetes binaries the end-to-end tests run on (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl) from the k8s.io/kubernetes
# Go module pinned in tests/kube/go.mod, through the Go module proxy, into KUBE_BIN_DIR (outside the
# work tree; the shared tools' default). Static (CGO_ENABLED=0), stripped, stamped with the pinned
# version as upstream's own build stamps it. A stamp file makes a second run a no-op until the pin,
# the build flags or the Go version change.
#
#   hack/kube-build.sh          build when the stamp differs; print KUBE_BIN_DIR on stdout
#   hack/kube-build.sh version  print the pinned version (v1.34.4) and nothing else
#
# KUBE_COMPONENTS (a subset of the list above, e.g. `kubectl` for make release) builds only
# those: a binary already built under the same stamp is kept, any other is removed when the
# stamp changes, so none is ever left from another pin.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD=$ROOT/tests/kube
KUBE_BIN_DIR=${KUBE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-kube/bin}
ALL="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
COMPONENTS=${KUBE_COMPONENTS:-$ALL}
log() { echo "kube-build: $*" >&2; }
die() { log "$*"; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go 1.24 or later (the Kubernetes binaries are built from Go modules)"
# The machine's own Go, never a toolchain download; builds are read-only on go.mod and go.sum.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# The one version: go.mod's requirement on k8s.io/kubernetes. Its staging modules must be the
# same release (v1.M.P -> v0.M.P), or the build mixes two Kubernetes versions.
version=$(cd "$MOD" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
[ "${1:-}" != version ] || { echo "$version"; exit 0; }
staging=v0.${version#v1.}
stale=$(cd "$MOD" && go list -m -f '{{if .Replace}}{{.Path}} {{.Replace.Version}}{{end}}' all |
  awk -v want="$staging" '$1 ~ /^k8s\.io\// && $2 != want {print $1 "@" $2}')
[ -z "$stale" ] || die "tests/kube/go.mod: these staging modules are not $staging, the release of k8s.io/kubernetes $version: $stale"

IFS=. read -r major minor _ <<<"${version#v}"
built=$(cd "$MOD" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$built"
done
tags=providerless
for c in $COMPONENTS; do
  [[ " $ALL " == *" $c "* ]] || die "KUBE_COMPONENTS: $c is not one of: $ALL"
done
stamp=$( { cat "$MOD/go.mod" "$MOD/go.sum"; go version; echo "$tags $ldflags $ALL"; } | sha256sum | cut -c1-16)

mkdir -p "$KUBE_BIN_DIR"
if [ "$(cat "$KUBE_BIN_DIR/.stamp" 2>/dev/null)" != "$stamp" ]; then
  # Built under another pin or flags: none of them is kept.
  for c in $ALL; do rm -f "$KUBE_BIN_DIR/$c"; done
  echo "$stamp" > "$KUBE_BIN_DIR/.stamp"
fi
missing=""; for c in $COMPONENTS; do [ -x "$KUBE_BIN_DIR/$c" ] || missing+=" $c"; done
if [ -z "$missing" ]; then log "Kubernetes $version is built in $KUBE_BIN_DIR"; echo "$KUBE_BIN_DIR"; exit 0; fi
COMPONENTS=${missing# }

log "building Kubernetes $version ($COMPONENTS) into $KUBE_BIN_DIR (a cold build takes a while on 2 cores)"
out=$(mktemp -d "$KUBE_BIN_DIR/.build.XXXXXX")
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
pkgs=(); for c in $COMPONENTS; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
(cd "$MOD" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/" "${pkgs[@]}")
# Each binary must say the pinned version, as the tests will ask it.
says_version() {
  if [ "$1" = kubectl ]; then
    "$out/$1" version --client -o json 2>/dev/null | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' | head -1
  else
    "$out/$1" --version 2>/dev/null | awk '{print $NF; exit}'
  fi
}
for c in $COMPONENTS; do
  got=$(says_version "$c" || true)
  [ "$got" = "$version" ] || die "$c says its version is '$got', not $version"
  mv -f "$out/$c" "$KUBE_BIN_DIR/$c"
done
echo "$version" > "$KUBE_BIN_DIR/.version"
log "built Kubernetes $version in $(( $(date +%s) - start )) s"
echo "$KUBE_BIN_DIR"
