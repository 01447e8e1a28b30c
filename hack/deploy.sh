#!/bin/sh
# `make deploy` / `make undeploy`: applies (or deletes) a kustomization, config/default unless
# given, with the controller image set to IMG, without editing a tracked file: the overlay is
# written to target/deploy/ (the kubebuilder convention, minus its `kustomize edit` of
# config/manager). PULL_POLICY, when set, becomes the container's imagePullPolicy. What `apply`
# installed is kept in target/deploy/installed.yaml, and `delete` removes exactly that, whatever
# CONFIG says then (it renders the kustomization only when nothing was recorded). A rollout that
# does not complete shows the Pods' state and their last events, not only kubectl's timeout.
# usage: hack/deploy.sh apply|delete IMG [KUSTOMIZATION_DIR]
set -eu
action=$1
img=$2
root=$(cd "$(dirname "$0")/.." && pwd)
base=$(cd "${3:-$root/config/default}" && pwd)
overlay="$root/target/deploy"
installed="$overlay/installed.yaml"
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

# Why a rollout did not complete: the Pods, their container states and the namespace's last events.
explain_rollout() {
  echo "deploy: deploy/$deployment in $namespace did not become ready; its Pods:" >&2
  kubectl -n "$namespace" get pods -l app=image-reflector-controller -o wide >&2 || true
  kubectl -n "$namespace" get pods -l app=image-reflector-controller -o \
    jsonpath='{range .items[*]}{.metadata.name}: {range .status.containerStatuses[*]}{.state}{"\n"}{end}{end}' >&2 || true
  echo "deploy: the last events in $namespace:" >&2
  kubectl -n "$namespace" get events --sort-by=.lastTimestamp 2>&1 | tail -n 10 >&2 || true
  # A container that exits says why in its last lines (a CrashLoopBackOff shows nothing else).
  echo "deploy: the last log lines of its container (the run before, if it restarted):" >&2
  kubectl -n "$namespace" logs "deploy/$deployment" --previous --tail=20 >&2 2>&1 \
    || kubectl -n "$namespace" logs "deploy/$deployment" --tail=20 >&2 2>&1 || true
}

if [ "$action" = delete ] && [ -f "$installed" ]; then
  : # delete what apply installed, below
else
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
fi

case "$action" in
  apply)
    kubectl kustomize "$overlay" > "$installed.new"
    kubectl apply -f "$installed.new"
    mv -f "$installed.new" "$installed"
    kubectl -n "$namespace" rollout status "deploy/$deployment" --timeout="${ROLLOUT_TIMEOUT:-180s}" \
      || { explain_rollout; exit 1; }
    ;;
  delete)
    # ImagePolicies and ImageRepositories carry Flux's finalizer, which only the running
    # controller removes: delete them while it runs, or deleting the CRDs and RBAC below would
    # leave them (and the CRDs) hanging.
    if kubectl get crd imagepolicies.image.toolkit.fluxcd.io imagerepositories.image.toolkit.fluxcd.io >/dev/null 2>&1; then
      kubectl delete imagepolicies.image.toolkit.fluxcd.io,imagerepositories.image.toolkit.fluxcd.io \
        --all --all-namespaces --wait --timeout="${DELETE_TIMEOUT:-120s}"
    fi
    if [ -f "$installed" ]; then
      kubectl delete -f "$installed" --ignore-not-found --wait --timeout="${DELETE_TIMEOUT:-120s}"
      rm -f "$installed"
    else
      echo "deploy: no record of an install in $installed; deleting what $base renders" >&2
      kubectl delete -k "$overlay" --ignore-not-found --wait --timeout="${DELETE_TIMEOUT:-120s}"
    fi
    ;;
  *)
    echo "usage: hack/deploy.sh apply|delete IMG [KUSTOMIZATION_DIR]" >&2
    exit 2
    ;;
esac
