#!/usr/bin/env bash
# The manifests of a release (hack/release.sh), for an image already built as REPO@DIGEST:
#   install.yaml                    config/default rendered with the image pinned by digest
#   crds.yaml                       `image-reflector crds`
#   flux/kustomization.yaml         a kustomize Component: Flux's image-reflector-controller (as
#   flux/image-reflector-crds.yaml  bootstrap's gotk-components.yaml or the module's config/ name
#                                   it) swapped for REPO@DIGEST, and Flux's two CRDs for ours
#   flux/flux-instance-patches.yaml the same for a flux-operator FluxInstance's spec.kustomize.patches
#   manifests.tgz                   all of the above as `flux build artifact` packs them (the layer of
#                                   the flux-manifests artifact release-push pushes)
# Needs kubectl (its kustomize) and the flux CLI: make release builds both, alone.
# usage: hack/release-manifests.sh BINARY REPO DIGEST DIST
set -euo pipefail
bin=$1
repo=$2
digest=$3
dist=$4
root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "release-manifests: $*" >&2; exit 1; }
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "DIGEST=$digest is not sha256:<64 hex>"
KUBE_BIN_DIR=${KUBE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-kube/bin}
FLUX_BIN_DIR=${FLUX_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-flux/bin}
PATH=$KUBE_BIN_DIR:$FLUX_BIN_DIR:$PATH
command -v kubectl >/dev/null || die "kubectl not found: KUBE_COMPONENTS=kubectl hack/kube-build.sh builds it"
command -v flux >/dev/null || die "the flux CLI not found: FLUX_COMPONENTS=flux hack/flux-build.sh builds it"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dist/flux" "$work/overlay" "$work/manifests"

# install.yaml: config/default, only the image set, by digest (kustomize wants a relative base).
cat > "$work/overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$work/overlay" "$root/config/default")
images:
  - name: ghcr.io/image-reflector/image-reflector
    newName: $repo
    digest: $digest
YAML
kubectl kustomize "$work/overlay" > "$dist/install.yaml"
grep -q "image: $repo@$digest\$" "$dist/install.yaml" || die "install.yaml does not name $repo@$digest"

"$bin" crds > "$dist/crds.yaml"
cp "$dist/crds.yaml" "$dist/flux/image-reflector-crds.yaml"
cat > "$dist/flux/kustomization.yaml" <<YAML
# image-reflector in place of Flux's image-reflector-controller: add this directory to the
# flux-system kustomization of your Git repository as a component (docs/install.md):
#   components: [image-reflector]
# Flux's Deployment, arguments, RBAC and probes stay; its image becomes ours and its two CRDs
# ours (a strategic merge patch of each whole CRD).
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - path: image-reflector-crds.yaml
images:
  # gotk-components.yaml (flux install, bootstrap) names ghcr.io/fluxcd/..., the controller
  # module's own config/ names fluxcd/...; the one that matches is swapped.
  - name: ghcr.io/fluxcd/image-reflector-controller
    newName: $repo
    digest: $digest
  - name: fluxcd/image-reflector-controller
    newName: $repo
    digest: $digest
YAML
{
  echo "# image-reflector in place of Flux's image-reflector-controller, for a FluxInstance's"
  echo "# spec.kustomize.patches (flux-operator): the image, then our two CRDs (docs/install.md)."
  "$bin" crds --patches --image "$repo@$digest"
} > "$dist/flux/flux-instance-patches.yaml"

# The flux-manifests artifact's content, packed by Flux's own CLI.
cp "$dist/install.yaml" "$dist/crds.yaml" "$work/manifests/"
cp -r "$dist/flux" "$work/manifests/flux"
flux build artifact --path "$work/manifests" --output "$dist/manifests.tgz" >/dev/null 2>&1 \
  || flux build artifact --path "$work/manifests" --output "$dist/manifests.tgz"
