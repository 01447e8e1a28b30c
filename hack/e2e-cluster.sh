#!/bin/sh
# `make e2e-cluster`: the controller as users install it, on a real single-node Kubernetes
# (../shared/tools/kube/cluster: kubelet, containerd, runc) running the Kubernetes binaries that
# hack/kube-build.sh builds from tests/kube/go.mod, driven by the kubectl of the same build. The image is loaded into the node
# and installed with `make deploy` (config/default, only the image and its pull policy set);
# then Distribution registries on the node's IP (one open, one with Basic auth) serve a few
# images, the local-registry samples and a private repository with a dockerconfigjson Secret
# are applied, and their status is checked; the door (config/admission) is applied and
# enforced (hack/e2e-cluster-door.sh); `kubectl rollout restart` hands the Lease to a new
# Pod, which goes on reconciling; the objects are deleted (the running controller removes its
# finalizers) and `make undeploy` removes everything. Then Flux's own install of
# image-reflector-controller (its module's config/, built by make flux) goes on with only the
# image swapped for ours, and Flux's image-automation-controller commits from it to a Git
# repository served here. The node is stopped at the end, also when a check fails. Prints
# "N passed, N failed".
# usage: hack/e2e-cluster.sh IMAGE   (IMAGE in podman/buildah storage, tag not `latest`)
set -eu
image=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cluster=${CLUSTER:-$root/../shared/tools/kube/cluster}
[ -x "$cluster" ] || { echo "e2e-cluster needs $cluster (../shared/tools/kube)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "e2e-cluster needs root (the node runs containerd and kubelet)" >&2; exit 2; }
KUBE_BIN_DIR=$("$root/hack/kube-build.sh")
export KUBE_BIN_DIR PATH="$KUBE_BIN_DIR:$PATH"
namespace=image-reflector-system
deployment=image-reflector-controller
lease=image-reflector-controller-leader-election
work=$(mktemp -d)
started=$(date +%s)
passed=0
failed=0
registries=""
log_streams=""

diagnose() {
  echo "--- diagnostics ---"
  kubectl get pods,deploy,lease -n "$namespace" -o wide 2>&1 || true
  kubectl describe pods -n "$namespace" 2>&1 | tail -n 40 || true
  kubectl get imagerepositories,imagepolicies -A -o yaml 2>&1 | tail -n 80 || true
  kubectl get events -A --sort-by=.lastTimestamp 2>&1 | tail -n 30 || true
  for f in "$work"/pod-*.log "$work"/image-automation-controller.log "$work"/git.log; do
    if [ -f "$f" ]; then echo "--- $f"; tail -n 30 "$f"; fi
  done
}
cleanup() {
  status=$?
  # Diagnostics never stand in the way of stopping the node (set -e holds in a trap too).
  [ "$status" = 0 ] && [ "$failed" = 0 ] || diagnose || true
  for pid in $log_streams $registries; do kill "$pid" 2>/dev/null || true; done
  "$cluster" stop >/dev/null 2>&1 || echo "e2e-cluster: cluster stop failed" >&2
  rm -rf "$work"
  echo "e2e-cluster: took $(( $(date +%s) - started ))s"
}
trap cleanup EXIT

. "$root/hack/e2e-checks.sh"

echo "e2e-cluster: starting the node"
# `start` prints the KUBECONFIG export last; one retry after a stop if the node did not come up.
start_node() { out=$("$cluster" start) && echo "$out" | grep '^export KUBECONFIG='; }
exports=$(start_node) || { echo "e2e-cluster: the node did not start; once more" >&2; "$cluster" stop >/dev/null 2>&1 || true; exports=$(start_node); } \
  || { echo "e2e-cluster: the node did not start" >&2; exit 1; }
eval "$exports"
node_ip=$("$cluster" node-ip)
"$cluster" load-podman "$image" >/dev/null

# --- install exactly as a user does: make deploy with the image (config/default otherwise)
kubectl kustomize "$root/config/default" > "$work/default.yaml"
PULL_POLICY=Never ROLLOUT_TIMEOUT=180s "$root/hack/deploy.sh" apply "$image" > "$work/deploy.log" 2>&1 \
  || { cat "$work/deploy.log" >&2; fail "make deploy: the Deployment rolls out"; exit 1; }
kubectl kustomize "$root/target/deploy" > "$work/overlay.yaml"
check "the overlay changes only the image and imagePullPolicy of config/default" \
  sh -c "diff '$work/default.yaml' '$work/overlay.yaml' | grep '^[<>]' | grep -v -e 'image: ' -e 'imagePullPolicy: ' | grep -q . && exit 1 || exit 0"
kubectl kustomize "$root/config/flux-notifications" > "$work/notifications.yaml"
check "config/flux-notifications adds only --events-addr with Flux's notification-controller address" \
  sh -c "[ \"\$(diff '$work/default.yaml' '$work/notifications.yaml' | grep '^[<>]' | sed 's/^> *//')\" = '- --events-addr=http://notification-controller.flux-system.svc.cluster.local./' ]"
eventually "the Deployment is Available (readiness and liveness probes pass)" 120 \
  kubectl wait -n "$namespace" --for=condition=Available "deploy/$deployment" --timeout=1s
pod=$(kubectl get pods -n "$namespace" -l app=image-reflector-controller -o jsonpath='{.items[0].metadata.name}')
kubectl logs -f -n "$namespace" "$pod" > "$work/pod-1.log" 2>&1 &
log_streams="$log_streams $!"
check "the Pod runs with a read-only root filesystem and has not restarted" \
  equals "pod/$pod" "$namespace" '{.spec.containers[0].securityContext.readOnlyRootFilesystem}/{.status.containerStatuses[0].restartCount}' "true/0"
eventually "the Pod holds the leader Lease" 60 \
  sh -c "kubectl get lease '$lease' -n '$namespace' -o jsonpath='{.spec.holderIdentity}' | grep -q '^${pod}_'"
eventually "the Pod connected with its ServiceAccount (in-cluster configuration)" 30 \
  grep -q '"source":"in-cluster"' "$work/pod-1.log"

# What users see of the controller's memory: the kubelet's working set of its container (what
# `kubectl top` and memory limits go by) and, of it, anonymous memory, from the node's summary
# API (refreshed every 10 to 15 s). Printed, not checked: docs/benchmarks.md keeps the figures.
memory() { # POD WHEN
  sleep 20
  kubectl get --raw "/api/v1/nodes/$(kubectl get pod -n "$namespace" "$1" -o jsonpath='{.spec.nodeName}')/proxy/stats/summary" \
    | python3 -c 'import json, sys
pod, when = sys.argv[1:3]
s = json.load(sys.stdin)
m = [c for p in s["pods"] if p["podRef"]["name"] == pod for c in p["containers"]][0]["memory"]
print("e2e-cluster: measured, %s: working set %.1f MiB, anonymous %.1f MiB" % (when, m["workingSetBytes"] / 2**20, m["rssBytes"] / 2**20))' "$1" "$2" \
    || echo "e2e-cluster: the kubelet's summary could not be read" >&2
}
# Idle: no objects, 70 s after the Pod was Ready (the controller's own settling takes 60).
sleep 50
memory "$pod" "the idle Pod (no objects)"

# --- registries on the node's IP, reachable from Pods: one open, one with Basic auth
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('${1:-$node_ip}',0)); print(s.getsockname()[1])"; }
serve_registry() { # NAME [AUTH_YAML [ADDRESS [STORAGE]]]: on the node's IP unless ADDRESS
  address=${3:-$node_ip}
  port=$(free_port "$address")
  mkdir -p "$work/$1"
  printf 'version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: "%s:%s", secret: e2e-only}\n%s\n' \
    "${4:-$work/$1/data}" "$address" "$port" "${2:-}" > "$work/$1/config.yml"
  docker-registry serve "$work/$1/config.yml" > "$work/$1/log" 2>&1 &
  registries="$registries $!"
  i=0
  until curl -s -o /dev/null "http://$address:$port/v2/"; do
    i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/$1/log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$address:$port"
}
open_registry=$(serve_registry open)
htpasswd -Bbn e2e-user e2e-secret-password > "$work/htpasswd"
auth_registry=$(serve_registry auth "auth: {htpasswd: {realm: e2e, path: $work/htpasswd}}")

# push REF [CREDS]: a small image whose content (and so digest) is REF's own.
push() {
  ctr=$(buildah from scratch)
  buildah config --label "e2e.ref=$1" --created-by e2e "$ctr"
  buildah commit --quiet --rm "$ctr" localhost/e2e-image:latest >/dev/null
  skopeo copy --quiet --dest-tls-verify=false ${2:+--dest-creds "$2"} \
    containers-storage:localhost/e2e-image:latest "docker://$1"
  skopeo inspect --tls-verify=false ${2:+--creds "$2"} --format '{{.Digest}}' "docker://$1"
}
for tag in 1.0.0 1.1.0 2.0.0; do push "$open_registry/demo/app:$tag" > "$work/digest-$tag"; done
creds=e2e-user:e2e-secret-password
for tag in 0.9.0 1.0.0; do push "$auth_registry/team/private:$tag" "$creds" > "$work/private-$tag"; done

# --- the local-registry samples (with the node's registry) and a private repository
sed "s#registry.local:5000#$open_registry#" "$root/config/samples/imagerepository_local.yaml" | kubectl apply -f - >/dev/null
kubectl apply -f "$root/config/samples/imagepolicy_local.yaml" >/dev/null
kubectl create secret docker-registry private-registry -n default \
  --docker-server="$auth_registry" --docker-username=e2e-user --docker-password=e2e-secret-password >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: private-app, namespace: default}
spec:
  image: $auth_registry/team/private
  interval: 1m
  insecure: true
  secretRef: {name: private-registry}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: private-app, namespace: default}
spec:
  imageRepositoryRef: {name: private-app}
  policy: {semver: {range: ">=0.1.0"}}
  digestReflectionPolicy: IfNotPresent
YAML

eventually "the local ImageRepository is Ready with 3 tags" 90 \
  equals imagerepository/local-app default '{.status.conditions[?(@.type=="Ready")].status}/{.status.lastScanResult.tagCount}' "True/3"
eventually "the local ImagePolicy elects 1.1.0 with its digest (semver, digestReflectionPolicy Always)" 60 \
  equals imagepolicy/local-app default '{.status.latestRef.tag}@{.status.latestRef.digest}' "1.1.0@$(cat "$work/digest-1.1.0")"
eventually "the private ImageRepository is Ready with 2 tags (dockerconfigjson Secret)" 90 \
  equals imagerepository/private-app default '{.status.conditions[?(@.type=="Ready")].status}/{.status.lastScanResult.tagCount}' "True/2"
eventually "the private ImagePolicy elects 1.0.0 with its digest (credentials on the manifest request too)" 60 \
  equals imagepolicy/private-app default '{.status.latestRef.tag}@{.status.latestRef.digest}' "1.0.0@$(cat "$work/private-1.0.0")"
eventually "an Event records the election" 30 \
  sh -c "kubectl get events -n default --field-selector involvedObject.kind=ImagePolicy,involvedObject.name=local-app -o name | grep -q ."

# --- a gated ImagePolicy in the Pod: platforms, and a cosign signature made here with openssl
# (ECDSA P-256 over the simple-signing payload, as `cosign sign --key` makes it) for 1.0.0 only.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/cosign.key" 2>/dev/null
openssl ec -in "$work/cosign.key" -pubout -out "$work/cosign.pub" 2>/dev/null
signed=$(cat "$work/digest-1.0.0")
printf '{"critical":{"identity":{"docker-reference":"%s/demo/app"},"image":{"docker-manifest-digest":"%s"},"type":"cosign container image signature"},"optional":null}' \
  "$open_registry" "$signed" > "$work/payload.json"
signature=$(openssl dgst -sha256 -sign "$work/cosign.key" "$work/payload.json" | base64 -w0)
# The node's platform as images name it (buildah builds for it).
go_arch() { case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }
# upload FILE: a blob of demo/app (the registry's monolithic upload); prints its digest.
upload() {
  d="sha256:$(sha256sum "$1" | cut -d' ' -f1)"
  location=$(curl -sS -D - -o /dev/null -X POST "http://$open_registry/v2/demo/app/blobs/uploads/" \
    | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
  case "$location" in http*) ;; *) location="http://$open_registry$location" ;; esac
  sep='?'; case "$location" in *\?*) sep='&' ;; esac
  curl -sS -f -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$1" \
    "$location${sep}digest=$d" >/dev/null
  echo "$d"
}
printf '{}' > "$work/empty.json"
config_digest=$(upload "$work/empty.json")
payload_digest=$(upload "$work/payload.json")
cat > "$work/signature.json" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
 "config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"$config_digest","size":2},
 "layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"$payload_digest",
   "size":$(stat -c %s "$work/payload.json"),"annotations":{"dev.cosignproject.cosign/signature":"$signature"}}]}
JSON
curl -sS -f -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
  --data-binary @"$work/signature.json" \
  "http://$open_registry/v2/demo/app/manifests/sha256-${signed#sha256:}.sig" >/dev/null
kubectl create secret generic cosign-keys -n default --from-file=cosign.pub="$work/cosign.pub" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: vetted-app, namespace: default}
spec:
  imageRepositoryRef: {name: local-app}
  policy: {semver: {range: ">=1.0.0"}}
  platforms: [linux/$(go_arch)]
  digestReflectionPolicy: IfNotPresent
  verify: {provider: cosign, secretRef: {name: cosign-keys}}
YAML
eventually "a gated ImagePolicy elects the signed 1.0.0 and holds back 2.0.0 and 1.1.0 (unsigned)" 60 \
  equals imagepolicy/vetted-app default '{.status.latestRef.tag}@{.status.latestRef.digest}/{.status.heldBack[*].tag}/{.status.heldBack[0].gate}' \
  "1.0.0@$signed/2.0.0 1.1.0/verify"
eventually "a HeldBack event names the unsigned tag" 30 \
  sh -c "kubectl get events -n default --field-selector involvedObject.name=vetted-app,reason=HeldBack -o jsonpath='{.items[*].message}' | grep -q '2.0.0 held back by verify: no signature (no cosign bundle among its referrers, no tag sha256-'"

# --- attestations at selection in the Pod: the real cosign v3 (make sigtools) attests 1.0.0's
# SLSA provenance with the key that signed it (imported), kept in the referrers tag schema
# (Distribution serves no referrers API). One policy requires provenance from example/app and
# elects 1.0.0; one requires it from example/other and holds 1.0.0 back, naming the entry and
# its false condition in status.heldBack and in the HeldBack event.
sigtools=$("$root/hack/sigtools-build.sh")
cosign_home="$work/cosign-home"
mkdir -p "$cosign_home"
cosign() { (cd "$cosign_home" && HOME=$cosign_home TUF_ROOT=$cosign_home/tuf COSIGN_PASSWORD='' "$sigtools/cosign" "$@"); }
openssl pkcs8 -topk8 -nocrypt -in "$work/cosign.key" -out "$cosign_home/key.pem"
cosign import-key-pair --key key.pem --output-key-prefix release >/dev/null 2>&1
cosign signing-config create --out signing-config.json >/dev/null 2>&1
cat > "$cosign_home/provenance.json" <<JSON
{"buildDefinition":{"buildType":"https://actions.github.io/buildtypes/workflow/v1",
  "externalParameters":{"workflow":{"repository":"https://github.com/example/app","ref":"refs/tags/v1.0.0",
  "path":".github/workflows/release.yml"}},"internalParameters":{},"resolvedDependencies":[]},
 "runDetails":{"builder":{"id":"https://github.com/actions/runner/github-hosted"},"metadata":{}}}
JSON
cosign attest --key release.key --signing-config signing-config.json --type slsaprovenance1 \
  --predicate provenance.json --yes "$open_registry/demo/app@$signed" >/dev/null 2>&1
slsa=https://slsa.dev/provenance/v1
for source in app other; do
  kubectl apply -f - >/dev/null <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: provenance-$source, namespace: default}
spec:
  imageRepositoryRef: {name: local-app}
  policy: {semver: {range: "1.0.x"}}
  digestReflectionPolicy: IfNotPresent
  verify:
    provider: cosign
    secretRef: {name: cosign-keys}
    attestations:
    - name: provenance
      predicateType: $slsa
      conditions:
      - expression: "predicate.buildDefinition.externalParameters.workflow.repository == 'https://github.com/example/$source'"
        message: built from example/$source
YAML
done
eventually "an attested ImagePolicy elects 1.0.0, its SLSA provenance from example/app" 60 \
  equals imagepolicy/provenance-app default '{.status.latestRef.tag}@{.status.latestRef.digest}' "1.0.0@$signed"
eventually "a policy asking for provenance from example/other holds 1.0.0 back, naming the entry and its condition" 60 \
  equals imagepolicy/provenance-other default '{.status.heldBack[0].tag}/{.status.heldBack[0].gate}/{.status.heldBack[0].reason}' \
  "1.0.0/verify/attestation 'provenance' ($slsa): built from example/other (is false)"
eventually "its HeldBack event names the failed attestation" 30 \
  sh -c "kubectl get events -n default --field-selector involvedObject.name=provenance-other,reason=HeldBack -o jsonpath='{.items[*].message}' | grep -q \"1.0.0 held back by verify: attestation 'provenance'\""

memory "$pod" "the settled Pod (2 repositories, 5 policies: signatures, attestations)"

# --- the offline tools on the controller's own clocks: its store archived from the Pod (the
# image has no shell and no tar), extracted, and its first sightings read by `scan`.
kubectl exec -n "$namespace" "$pod" -- /usr/local/bin/image-reflector store archive > "$work/data.tar"
mkdir -p "$work/data"
check "store archive copies the controller's store out of its Pod" \
  sh -c "tar -xf '$work/data.tar' -C '$work/data' && ls '$work/data/imagerepository/default/local-app' | grep -q '^tags'"

# --- the door: config/admission on the real node (hack/e2e-cluster-door.sh)
. "$root/hack/e2e-cluster-door.sh"

# --- a new Pod takes the Lease and goes on reconciling
kubectl rollout restart -n "$namespace" "deploy/$deployment" >/dev/null
check "kubectl rollout restart completes" \
  kubectl rollout status -n "$namespace" "deploy/$deployment" --timeout=180s
new_pod=$(kubectl get pods -n "$namespace" -l app=image-reflector-controller \
  --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].metadata.name}')
kubectl logs -f -n "$namespace" "$new_pod" > "$work/pod-2.log" 2>&1 &
log_streams="$log_streams $!"
check "the restart made a new Pod" test "$new_pod" != "$pod"
eventually "the new Pod takes the Lease" 90 \
  sh -c "kubectl get lease '$lease' -n '$namespace' -o jsonpath='{.spec.holderIdentity}' | grep -q '^${new_pod}_'"
check "the objects stayed Ready through the restart" \
  equals imagepolicy/local-app default '{.status.conditions[?(@.type=="Ready")].status}/{.status.latestRef.tag}' "True/1.1.0"
push "$open_registry/demo/app:1.2.0" > "$work/digest-1.2.0"
kubectl annotate --overwrite imagerepository/local-app -n default "reconcile.fluxcd.io/requestedAt=e2e-$(date +%s)" >/dev/null
eventually "the new leader scans on request and elects the new tag 1.2.0 with its digest" 60 \
  equals imagepolicy/local-app default '{.status.latestRef.tag}@{.status.latestRef.digest}' "1.2.0@$(cat "$work/digest-1.2.0")"

# --- deleting: the running controller removes its finalizers, nothing hangs
check "deleting the ImagePolicies and ImageRepositories completes (finalizers removed)" \
  kubectl delete -n default imagepolicy/local-app imagepolicy/private-app \
  imagerepository/local-app imagerepository/private-app --wait --timeout=60s
check "the controller's log has no 'forbidden' (RBAC: 'is forbidden: User ... cannot')" \
  sh -c "! grep -i forbidden '$work'/pod-*.log"
check "make undeploy removes everything without hanging" \
  env DELETE_TIMEOUT=120s "$root/hack/deploy.sh" delete "$image"
check "the namespace and the CRDs are gone" \
  sh -c "! kubectl get namespace '$namespace' >/dev/null 2>&1 && ! kubectl get crd imagerepositories.image.toolkit.fluxcd.io >/dev/null 2>&1"

# --- a deploy that cannot roll out says why; undeploy removes what deploy installed
ROLLOUT_TIMEOUT=45s "$root/hack/deploy.sh" apply "127.0.0.1:1/missing/image:dev" > "$work/bad-deploy.log" 2>&1 || true
check "a deploy whose image cannot be pulled shows the Pod's state and the last events" \
  sh -c "grep -q 'ErrImagePull\|ImagePullBackOff' '$work/bad-deploy.log' && grep -q 'the last events in $namespace' '$work/bad-deploy.log'"
check "make undeploy with another CONFIG removes what make deploy installed" \
  sh -c "env DELETE_TIMEOUT=120s '$root/hack/deploy.sh' delete x '$root/config/flux-notifications' >/dev/null && ! kubectl get namespace '$namespace' >/dev/null 2>&1 && [ ! -f '$root/target/deploy/installed.yaml' ]"

# --- Flux's own install of image-reflector-controller (its module's config/, as built by make
# flux), with only the image swapped for ours (docs/install.md): Flux's args, probes, ports,
# securityContext, RBAC and CRDs; it reconciles the samples, and Flux's image-automation-controller
# (a local process with the node's kubeconfig) commits from it to a Git repository served here.
FLUX_BIN_DIR=$("$root/hack/flux-build.sh")
swap=$work/flux-swap
mkdir -p "$swap"
cp -r "$FLUX_BIN_DIR/image-reflector-controller.config" "$swap/upstream"
cat > "$swap/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [upstream/default]
# Both names docs/install.md gives: gotk-components.yaml (flux install, bootstrap) names
# ghcr.io/fluxcd/..., the controller module's own config/ names fluxcd/...; one matches.
images:
  - name: ghcr.io/fluxcd/image-reflector-controller
    newName: ${image%:*}
    newTag: ${image##*:}
  - name: fluxcd/image-reflector-controller
    newName: ${image%:*}
    newTag: ${image##*:}
YAML
kubectl kustomize "$swap/upstream/default" > "$work/flux.yaml"
kubectl kustomize "$swap" > "$work/swapped.yaml"
check "the swap changes only the image of Flux's install" \
  sh -c "[ \"\$(diff '$work/flux.yaml' '$work/swapped.yaml' | grep '^[<>]' | grep -cv 'image: ')\" = 0 ] && diff '$work/flux.yaml' '$work/swapped.yaml' | grep -q 'image: ${image}'"
kubectl apply --server-side -f "$work/swapped.yaml" > /dev/null
eventually "Flux's Deployment, with our image, is Available (Flux's probes, ports, securityContext)" 180 \
  kubectl wait -n "$namespace" --for=condition=Available "deploy/$deployment" --timeout=1s
flux_pod=$(kubectl get pods -n "$namespace" -l app=image-reflector-controller -o jsonpath='{.items[0].metadata.name}')
kubectl logs -f -n "$namespace" "$flux_pod" > "$work/pod-flux.log" 2>&1 &
log_streams="$log_streams $!"
check "the Pod runs with Flux's args and its ServiceAccount" \
  equals "pod/$flux_pod" "$namespace" '{.spec.containers[0].args}/{.spec.serviceAccountName}' \
  '["--watch-all-namespaces","--log-level=info","--log-encoding=json","--enable-leader-election"]/default'
sed "s#registry.local:5000#$open_registry#" "$root/config/samples/imagerepository_local.yaml" | kubectl apply -f - >/dev/null
kubectl apply -f "$root/config/samples/imagepolicy_local.yaml" >/dev/null
eventually "with Flux's install, the local ImagePolicy elects 1.2.0 with its digest" 90 \
  equals imagepolicy/local-app default '{.status.latestRef.tag}@{.status.latestRef.digest}' "1.2.0@$(cat "$work/digest-1.2.0")"
policy_uid=$(jsonpath imagepolicy/local-app default '{.metadata.uid}')
eventually "with Flux's RBAC, an Event records the election" 30 \
  sh -c "kubectl get events -n default --field-selector involvedObject.uid=$policy_uid -o name | grep -q ."
# A Git repository over HTTP (git http-backend behind hack/git-http-server.py, on loopback) with
# a setter, and image-automation-controller committing to it.
git_root=$work/git
mkdir -p "$git_root/repos" "$git_root/seed/apps"
git init -q --bare -b main "$git_root/repos/fleet.git"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers:\n    - name: app\n      image: %s/demo/app:1.0.0 # {"$imagepolicy": "default:local-app"}\n' \
  "$open_registry" > "$git_root/seed/apps/pod.yaml"
(cd "$git_root/seed" && git init -q -b main && git add . && git -c user.name=e2e -c user.email=e2e@example.com commit -q -m seed && git push -q "$git_root/repos/fleet.git" main)
git_port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
python3 "$root/hack/git-http-server.py" "$git_root/repos" "$git_port" > "$work/git.log" 2>&1 &
registries="$registries $!"
kubectl apply --server-side -f "$FLUX_BIN_DIR/crds" > /dev/null
kubectl wait --for=condition=Established --timeout=60s crd/imageupdateautomations.image.toolkit.fluxcd.io crd/gitrepositories.source.toolkit.fluxcd.io > /dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: default}
spec: {url: "http://127.0.0.1:$git_port/fleet.git", interval: 1h, ref: {branch: main}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: fleet, namespace: default}
spec:
  interval: 1h
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    checkout: {ref: {branch: main}}
    push: {branch: main}
    commit: {author: {name: fluxbot, email: fluxbot@example.com}}
  update: {path: ./apps, strategy: Setters}
YAML
RUNTIME_NAMESPACE=default "$FLUX_BIN_DIR/image-automation-controller" --watch-all-namespaces=false \
  --metrics-addr=0 --health-addr=0 > "$work/image-automation-controller.log" 2>&1 &
registries="$registries $!"
eventually "image-automation-controller commits the election of our controller in Flux's install" 90 \
  sh -c "git -C '$git_root/repos/fleet.git' show main:apps/pod.yaml | grep -q '$open_registry/demo/app:1.2.0@$(cat "$work/digest-1.2.0")'"
check "the controller's log with Flux's RBAC has no 'forbidden'" \
  sh -c "! grep -i forbidden '$work/pod-flux.log'"
kubectl delete -n default imagepolicy/local-app imagerepository/local-app --wait --timeout=60s >/dev/null 2>&1 || true

echo "e2e-cluster: $passed passed, $failed failed"
[ "$failed" = 0 ]
