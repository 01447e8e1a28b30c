#!/usr/bin/env bash
# `make e2e-release`: a release installed as a user installs it, on the real node
# (../shared/tools/kube/cluster), from the bundle alone. DIST was made by `make release` for
# REGISTRY=NODE_IP:PORT (the node's bridge address: 10.244.0.1); here:
#   - a Distribution registry with TLS on NODE_IP:PORT (a CA made here, which containerd is
#     given as SSL_CERT_FILE and the controller as the ImageRepository's certSecretRef);
#   - make release-push: the image, the flux-manifests artifact, their cosign signatures with a
#     release key made here, the SBOM and SLSA provenance attestations; cosign's own verify and
#     verify-attestation, with only the public key, accept them;
#   - `kubectl apply -f DIST/install.yaml`: the node pulls the image by digest from that
#     registry and the controller becomes Ready, with the version and commit of the provenance;
#   - an ImagePolicy that requires our release key's signature and our provenance elects our own
#     release tag, and holds back an unsigned rebuild pushed beside it;
#   - `flux pull artifact` gives back the manifests that install.yaml is.
# Prints "N passed, N failed"; the node is stopped at the end, also when a check fails.
# usage: hack/e2e-release.sh DIST
set -euo pipefail
dist=$(cd "${1:?usage: hack/e2e-release.sh DIST}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cluster=${CLUSTER:-$root/../shared/tools/kube/cluster}
[ -x "$cluster" ] || { echo "e2e-release needs $cluster (../shared/tools/kube)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "e2e-release needs root (the node runs containerd and kubelet)" >&2; exit 2; }
KUBE_BIN_DIR=$("$root/hack/kube-build.sh")
SIGTOOLS_BIN_DIR=$("$root/hack/sigtools-build.sh")
FLUX_BIN_DIR=$("$root/hack/flux-build.sh")
export KUBE_BIN_DIR SIGTOOLS_BIN_DIR FLUX_BIN_DIR PATH="$KUBE_BIN_DIR:$PATH"
read_statement() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$dist/provenance.intoto.json" "$1"; }
repo=$(read_statement 's["subject"][0]["name"]')
digest=sha256:$(read_statement 's["subject"][0]["digest"]["sha256"]')
version=$(read_statement 's["predicate"]["buildDefinition"]["externalParameters"]["version"]')
commit=$(read_statement 's["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"]')
registry=${repo%/image-reflector}
namespace=image-reflector-system
work=$(mktemp -d)
started=$(date +%s)
passed=0
failed=0
pids=""

cleanup() {
  status=$?
  if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
    echo "--- diagnostics ---"
    kubectl get pods -n "$namespace" -o wide 2>&1 || true
    kubectl describe pods -n "$namespace" 2>&1 | tail -n 30 || true
    kubectl get imagerepositories,imagepolicies -A -o yaml 2>&1 | tail -n 60 || true
    kubectl get events -A --sort-by=.lastTimestamp 2>&1 | tail -n 20 || true
    tail -n 20 "$work/registry.log" 2>/dev/null || true
  fi
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  "$cluster" stop >/dev/null 2>&1 || echo "e2e-release: cluster stop failed" >&2
  rm -rf "$work"
  echo "e2e-release: took $(( $(date +%s) - started ))s"
}
trap cleanup EXIT
. "$root/hack/e2e-checks.sh"

# --- a CA and the registry's certificate for the node's address; containerd trusts the CA
host=${registry%:*}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=e2e-release-ca \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
  -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$host" > "$work/ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
  -extfile "$work/ext" -out "$work/tls.crt" 2>/dev/null
cat /etc/ssl/certs/ca-certificates.crt "$work/ca.crt" > "$work/bundle.crt" 2>/dev/null || cp "$work/ca.crt" "$work/bundle.crt"

echo "e2e-release: starting the node (containerd trusts the test CA)"
"$cluster" stop >/dev/null 2>&1 || true
exports=$(SSL_CERT_FILE=$work/bundle.crt "$cluster" start | grep '^export KUBECONFIG=') \
  || { echo "e2e-release: the node did not start" >&2; exit 1; }
eval "$exports"
[ "$("$cluster" node-ip)" = "$host" ] || { echo "e2e-release: DIST was made for $registry, the node is $("$cluster" node-ip)" >&2; exit 1; }
printf 'version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}, delete: {enabled: true}}\nhttp: {addr: "%s", secret: e2e-only, tls: {certificate: %s, key: %s}}\n' \
  "$work/data" "$registry" "$work/tls.crt" "$work/tls.key" > "$work/registry.yml"
docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 &
pids="$pids $!"
i=0
until curl -s --cacert "$work/ca.crt" -o /dev/null "https://$registry/v2/"; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/registry.log" >&2; exit 1; }
  sleep 0.1
done

# --- publish as a release manager does, with a release key made here
(cd "$work" && HOME=$work COSIGN_PASSWORD=e2e-release "$SIGTOOLS_BIN_DIR/cosign" generate-key-pair --output-key-prefix release >/dev/null 2>&1)
cosign() { HOME=$work TUF_ROOT=$work/tuf SSL_CERT_FILE=$work/bundle.crt "$SIGTOOLS_BIN_DIR/cosign" "$@"; }
check "make release-push publishes, signs and attests the release (its own cosign verify passes)" \
  env HOME="$work" COSIGN_KEY="$work/release.key" COSIGN_PASSWORD=e2e-release REGISTRY_CA_FILE="$work/ca.crt" \
  "$root/hack/release-push.sh" "$dist" "$registry"
# As a user verifies: the public key alone, no transparency log (a release key).
verify() { cosign verify --key "$work/$1.pub" --insecure-ignore-tlog=true "$repo@$digest" >/dev/null 2>&1; }
provenance_names_the_commit() {
  cosign verify-attestation --key "$work/release.pub" --insecure-ignore-tlog=true --type slsaprovenance1 \
    "$repo@$digest" 2>/dev/null | python3 -c '
import base64, json, sys
statement = json.loads(base64.b64decode(json.loads(sys.stdin.readline())["payload"]))
sys.exit(statement["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"] != sys.argv[1])' "$commit"
}
sbom_attested() {
  cosign verify-attestation --key "$work/release.pub" --insecure-ignore-tlog=true --type cyclonedx \
    "$repo@$digest" >/dev/null 2>&1
}
check "cosign verify, with the public key alone, accepts the image's signature" verify release
check "cosign verify-attestation accepts the SLSA provenance, naming our commit" provenance_names_the_commit
check "cosign verify-attestation accepts the CycloneDX SBOM" sbom_attested
(cd "$work" && HOME=$work COSIGN_PASSWORD=x "$SIGTOOLS_BIN_DIR/cosign" generate-key-pair --output-key-prefix other >/dev/null 2>&1)
refused_under_another_key() { ! verify other; }
check "a user's cosign verify refuses the image under another key" refused_under_another_key
# The verification docs/install.md gives, as a user runs it on what they downloaded (install.yaml,
# SHA256SUMS and its signature alone): the digest install.yaml pins is the one that verifies.
documented_verification() (
  mkdir -p "$work/user" && cd "$work/user" || exit 1
  cp "$dist/install.yaml" "$dist/SHA256SUMS" "$dist/SHA256SUMS.cosign.bundle" . || exit 1
  cosign verify-blob --key "$work/release.pub" --insecure-ignore-tlog=true \
    --bundle SHA256SUMS.cosign.bundle SHA256SUMS >/dev/null 2>&1 || exit 1
  sha256sum -c --ignore-missing SHA256SUMS >/dev/null || exit 1
  IMAGE=$(grep -o '[^ ]*image-reflector@sha256:[0-9a-f]\{64\}' install.yaml | head -1)
  [ "$IMAGE" = "$repo@$digest" ] || exit 1
  cosign verify --key "$work/release.pub" --insecure-ignore-tlog=true "$IMAGE" >/dev/null 2>&1 || exit 1
  cosign verify-attestation --key "$work/release.pub" --insecure-ignore-tlog=true --type slsaprovenance1 \
    "$IMAGE" >/dev/null 2>&1
)
check "the documented verification: SHA256SUMS's signature, sha256sum --ignore-missing, then cosign on the digest install.yaml pins" \
  documented_verification
# SHA256SUMS changed after signing (a line of a forged install.yaml): verify-blob refuses it.
forged_sums_refused() (
  mkdir -p "$work/forged" && cd "$work/forged" || exit 1
  cp "$dist/SHA256SUMS.cosign.bundle" . && sed 's/^./0/' "$dist/SHA256SUMS" > SHA256SUMS || exit 1
  ! cosign verify-blob --key "$work/release.pub" --insecure-ignore-tlog=true \
    --bundle SHA256SUMS.cosign.bundle SHA256SUMS >/dev/null 2>&1
)
check "a SHA256SUMS changed after signing is refused by cosign verify-blob" forged_sums_refused
mkdir -p "$work/pulled"
check "flux pull artifact gives back the release's install.yaml" \
  sh -c "SSL_CERT_FILE='$work/bundle.crt' '$FLUX_BIN_DIR/flux' pull artifact 'oci://$repo-manifests:$version' --output '$work/pulled' >/dev/null 2>&1 && cmp -s '$work/pulled/install.yaml' '$dist/install.yaml'"

# --- installed from the bundle alone
kubectl apply -f "$dist/install.yaml" > "$work/apply.log"
eventually "kubectl apply -f install.yaml: the Deployment is Available, its image pulled by digest from the registry" 180 \
  kubectl wait -n "$namespace" --for=condition=Available deploy/image-reflector-controller --timeout=1s
pod=$(kubectl get pods -n "$namespace" -l app=image-reflector-controller -o jsonpath='{.items[0].metadata.name}')
check "the Pod runs $repo@$digest" \
  sh -c "kubectl get pod -n '$namespace' '$pod' -o jsonpath='{.status.containerStatuses[0].imageID}' | grep -q '$digest\$'"
check "the controller in the Pod is $version at the provenance's commit" \
  sh -c "[ \"\$(kubectl exec -n '$namespace' '$pod' -- /usr/local/bin/image-reflector --version)\" = 'image-reflector $version (commit $commit)' ]"

# --- an unsigned rebuild beside the release, and our own gate over both
ctr=$(buildah from --quiet "oci-archive:$dist/image-reflector-$version.oci.tar:$version")
buildah config --label e2e.rebuild=unsigned "$ctr"
buildah commit --quiet --rm "$ctr" localhost/image-reflector:e2e-rebuild >/dev/null
mkdir -p "$work/certs" && cp "$work/ca.crt" "$work/certs/ca.crt"
skopeo copy --quiet --dest-cert-dir "$work/certs" containers-storage:localhost/image-reflector:e2e-rebuild "docker://$repo:v99.0.0"
kubectl create secret generic registry-ca -n default --from-file=ca.crt="$work/ca.crt" >/dev/null
kubectl create secret generic release-key -n default --from-file=cosign.pub="$work/release.pub" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: image-reflector, namespace: default}
spec:
  image: $repo
  interval: 1m
  certSecretRef: {name: registry-ca}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: image-reflector, namespace: default}
spec:
  imageRepositoryRef: {name: image-reflector}
  policy: {semver: {range: ">=0.1.0"}}
  digestReflectionPolicy: IfNotPresent
  verify:
    provider: cosign
    secretRef: {name: release-key}
    attestations:
    - name: provenance
      predicateType: https://slsa.dev/provenance/v1
      conditions:
      - expression: "predicate.buildDefinition.resolvedDependencies[0].digest.gitCommit == '$commit'"
        message: built from $commit
YAML
eventually "our gate elects our own release $version by its signature and provenance" 90 \
  equals imagepolicy/image-reflector default '{.status.latestRef.tag}@{.status.latestRef.digest}' "$version@$digest"
check "and holds back the unsigned rebuild v99.0.0, saying why" \
  sh -c "kubectl get imagepolicy/image-reflector -n default -o jsonpath='{.status.heldBack[0].tag}/{.status.heldBack[0].gate}/{.status.heldBack[0].reason}' | grep -q '^v99.0.0/verify/no signature'"

echo "e2e-release: $passed passed, $failed failed"
[ "$failed" = 0 ]
