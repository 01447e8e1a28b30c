#!/bin/sh
# `make deploy` / `make undeploy`: applies (or deletes) a kustomization, config/default unless
# given, with the controller image set to IMG, without editing a tracked file: the overlay is
# written to target/deploy/ (the kubebuilder convention, minus its `kustomize edit` of
# config/manager). PULL_POLICY, when set, becomes the container's imagePullPolicy.
# usage: hack/deploy.sh apply|delete IMG [KUSTOMIZATION_DIR]
set -eu
action=$1
img=$2
root=$(cd "$(dirname "$0")/.." && pwd)
base=$(cd "${3:-$root/config/default}" && pwd)
overlay="$root/target/deploy"
namespace=image-reflector-system
deployment=image-reflector-controller

# IMG as kustomize's images entry: registry/path[:tag][@digest]; a port is not a tag.
case "$img" in
  *@*) name=${img%@*}; digest=${img#*@}; tag="" ;;
  *) name=$img; digest=""; tag="" ;;
esac
case "${name##*/}" in
  *:*) tag=${name##*:}; name=${name%:*} ;;
esac
[ -n "$tag" ] || [ -n "$digest" ] || tag=latest

mkdir -p "$overlay"
{
  echo "# Written by hack/deploy.sh for IMG=$img; not tracked."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - $(realpath --relative-to="$overlay" "$base")"
  echo "images:"
  echo "  - name: ghcr.io/image-reflector/image-reflector"
  echo "    newName: $name"
  [ -z "$tag" ] || echo "    newTag: \"$tag\""
  [ -z "$digest" ] || echo "    digest: $digest"
  if [ -n "${PULL_POLICY:-}" ]; then
    echo "patches:"
    echo "  - target: {kind: Deployment, name: $deployment}"
    echo "    patch: |-"
    echo "      - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: $PULL_POLICY}"
  fi
} > "$overlay/kustomization.yaml"

case "$action" in
  apply)
    kubectl apply -k "$overlay"
    kubectl -n "$namespace" rollout status "deploy/$deployment" --timeout="${ROLLOUT_TIMEOUT:-180s}"
    ;;
  delete)
    # ImagePolicies and ImageRepositories carry Flux's finalizer, which only the running
    # controller removes: delete them while it runs, or deleting the CRDs and RBAC below would
    # leave them (and the CRDs) hanging.
    if kubectl get crd imagepolicies.image.toolkit.fluxcd.io imagerepositories.image.toolkit.fluxcd.io >/dev/null 2>&1; then
      kubectl delete imagepolicies.image.toolkit.fluxcd.io,imagerepositories.image.toolkit.fluxcd.io \
        --all --all-namespaces --wait --timeout="${DELETE_TIMEOUT:-120s}"
    fi
    kubectl delete -k "$overlay" --ignore-not-found --wait --timeout="${DELETE_TIMEOUT:-120s}"
    ;;
  *)
    echo "usage: hack/deploy.sh apply|delete IMG [KUSTOMIZATION_DIR]" >&2
    exit 2
    ;;
esac
