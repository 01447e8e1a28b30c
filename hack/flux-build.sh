#!/usr/bin/env bash
# make flux: builds the Flux components the Flux end-to-end tests run beside our controller
# (image-automation-controller, notification-controller, the flux CLI), kstatus-judge (a
# program of ours, tests/flux/kstatus-judge: Flux's kstatus reading an object's health, as a
# Kustomization's health check does) and the controller ours
# replaces (image-reflector-controller: its install for the swap check, its binary for the
# benchmarks) from their Go modules,
# each pinned in tests/flux/<component>/go.mod, through the Go module proxy, into FLUX_BIN_DIR
# (outside the work tree), with the CRDs they serve (and source-controller's GitRepository CRD,
# of the source API release image-automation-controller requires) in FLUX_BIN_DIR/crds. Static,
# stripped; a stamp per component makes a second run a no-op until its pin, the flags or the Go
# version change.
#
# How each is built, since `go install MODULE@VERSION` refuses a module whose go.mod has replace
# directives (all four have one):
#  - each go.mod of ours requires the component's module and names its main package in a `tool`
#    directive; the component's own replaces are repeated there, and its `=> ./api` replace (a
#    path inside its repository, invisible to a module requiring it) becomes the published api
#    module of the same release;
#  - the flux CLI embeds `cmd/flux/manifests/*.yaml`, which its own Makefile generates (from
#    release downloads) and the published module does not carry: the build copies that module
#    into its build directory, adds one placeholder manifest there and points a replace at the
#    copy (`go build -overlay` cannot do it: files in the module cache may not be replaced). So
#    `flux install` has no manifests in this build; the tests do not use it.
#
#   hack/flux-build.sh           build what is stale; print FLUX_BIN_DIR on stdout
#   hack/flux-build.sh versions  print "component version" lines and nothing else
#
# FLUX_COMPONENTS (a subset of the list below, e.g. `flux` for make release) builds only those.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FLUX_BIN_DIR=${FLUX_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-flux/bin}
ALL="image-automation-controller notification-controller flux image-reflector-controller kstatus-judge"
COMPONENTS=${FLUX_COMPONENTS:-$ALL}
log() { echo "flux-build: $*" >&2; }
die() { log "$*"; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go 1.26 or later (the Flux components are built from Go modules)"
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# The main package a go.mod of ours builds (its one `tool` directive, else its own directory:
# a program of ours), and that package's module.
tool_of() { sed -n 's/^tool \(.*\)$/\1/p' "$1/go.mod" | head -1 | grep . || echo .; }
module_of() { (cd "$1" && go list -e -f '{{.Module.Path}}' "$(tool_of "$1")"); }
# A program of ours is versioned by what it judges with: its first direct requirement.
version_of() {
  if [ "$(tool_of "$1")" = . ]; then
    (cd "$1" && go list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}@{{.Version}}{{end}}' all | head -1)
  else
    (cd "$1" && go list -m -f '{{.Version}}' "$(module_of "$1")")
  fi
}

for c in $COMPONENTS; do
  [[ " $ALL " == *" $c "* ]] || die "FLUX_COMPONENTS: $c is not one of: $ALL"
done
if [ "${1:-}" = versions ]; then
  for c in $ALL; do echo "$c $(version_of "$ROOT/tests/flux/$c")"; done
  exit 0
fi

mkdir -p "$FLUX_BIN_DIR/crds"
for c in $COMPONENTS; do
  mod=$ROOT/tests/flux/$c
  pkg=$(tool_of "$mod")
  version=$(version_of "$mod")
  ldflags="-s -w"
  [ "$c" != flux ] || ldflags+=" -X main.VERSION=${version#v}"
  stamp=$( { cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go 2>/dev/null; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)
  if [ "$(cat "$FLUX_BIN_DIR/.$c.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$FLUX_BIN_DIR/$c" ]; then
    log "$c $version is built"
    continue
  fi
  log "building $c $version into $FLUX_BIN_DIR"
  start=$(date +%s)
  work=$(mktemp -d "$FLUX_BIN_DIR/.build.XXXXXX")
  cp "$mod/go.mod" "$mod/go.sum" "$work/"
  [ "$pkg" != . ] || cp "$mod"/*.go "$work/"
  if [ "$c" = flux ]; then
    src=$(cd "$mod" && go list -m -f '{{.Dir}}' "$(module_of "$mod")")
    cp -r "$src" "$work/module" && chmod -R u+w "$work/module"
    mkdir -p "$work/module/cmd/flux/manifests"
    echo "# image-reflector's test build of the flux CLI embeds no install manifests" \
      > "$work/module/cmd/flux/manifests/placeholder.yaml"
    (cd "$work" && go mod edit -replace "$(module_of "$mod")=./module")
  fi
  (cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$work/$c" "$pkg")
  dir=$(cd "$mod" && go list -m -f '{{.Dir}}' "$(module_of "$mod")")
  case $c in
    # The CRDs the component serves, from its module's own config.
    image-automation-controller|notification-controller)
      cp -f "$dir"/config/crd/bases/*.yaml "$FLUX_BIN_DIR/crds/" ;;
    # The controller ours replaces: its install (config/, CRDs included) for the swap check,
    # kept apart so that its CRDs never stand in for ours.
    image-reflector-controller)
      rm -rf "$FLUX_BIN_DIR/$c.config"
      cp -r "$dir/config" "$FLUX_BIN_DIR/$c.config" && chmod -R u+w "$FLUX_BIN_DIR/$c.config" ;;
  esac
  mv -f "$work/$c" "$FLUX_BIN_DIR/$c"
  rm -rf "$work"
  echo "$stamp" > "$FLUX_BIN_DIR/.$c.stamp"
  log "built $c $version in $(( $(date +%s) - start )) s"
done

# GitRepository's CRD (image-automation-controller reads GitRepositories; source-controller
# need not run), from the source-controller release whose api module it requires; with it.
if [[ " $COMPONENTS " != *" image-automation-controller "* ]]; then echo "$FLUX_BIN_DIR"; exit 0; fi
api=$(cd "$ROOT/tests/flux/image-automation-controller" && go list -m -f '{{.Version}}' github.com/fluxcd/source-controller/api)
if [ ! -f "$FLUX_BIN_DIR/crds/.source-$api" ]; then
  dir=$(cd "$FLUX_BIN_DIR" && GOFLAGS= go mod download -json "github.com/fluxcd/source-controller@$api" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || die "source-controller $api could not be downloaded for its GitRepository CRD"
  cp -f "$dir/config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml" "$FLUX_BIN_DIR/crds/"
  touch "$FLUX_BIN_DIR/crds/.source-$api"
fi
echo "$FLUX_BIN_DIR"
