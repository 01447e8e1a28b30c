#!/usr/bin/env bash
# `make release-push REGISTRY=...`: publishes the release in DIST (make release) to the repository
# its install.yaml pins, REPO, and signs it with cosign (make release-push builds the cosign v3
# the tests use, alone; any cosign v2.4+ or v3 works):
#   REPO:VERSION                the image, digests preserved (install.yaml's REPO@digest)
#   REPO-manifests:VERSION      install.yaml, crds.yaml and flux/ as Flux's flux-manifests artifact
#                               (`flux push artifact`, the layer is DIST/manifests.tgz)
#   signatures                  of both, with COSIGN_KEY (a cosign key file, or a KMS URI)
#   attestations                of the image: the SBOM (--type cyclonedx) and the SLSA provenance
#                               (--type slsaprovenance1)
#   DIST/SHA256SUMS.cosign.bundle  SHA256SUMS signed with the same key (`cosign sign-blob`), to
#                               publish beside it
# and checks each with `cosign verify` / `verify-attestation` against COSIGN_PUB before it ends.
# Environment: COSIGN_KEY, COSIGN_PUB (default: COSIGN_KEY with .pub), COSIGN_PASSWORD;
# COSIGN_SIGNING_CONFIG (a cosign signing config; default: none, no transparency log: see
# docs/release.md for keyless signing from CI with Rekor); REGISTRY_CA_FILE (a CA bundle the
# registry's certificate chains to, added to the system's).
# usage: hack/release-push.sh DIST REGISTRY
set -euo pipefail
dist=$(cd "${1:?usage: hack/release-push.sh DIST REGISTRY}" && pwd)
registry=${2:?usage: hack/release-push.sh DIST REGISTRY}
root=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "release-push: $*" >&2; }
die() { log "$*"; exit 1; }
[ -f "$dist/SHA256SUMS" ] || die "$dist has no SHA256SUMS: make release VERSION=... first"
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || die "$dist does not match its SHA256SUMS: make release again"

read_statement() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$dist/provenance.intoto.json" "$1"; }
repo=$(read_statement 's["subject"][0]["name"]')
digest=sha256:$(read_statement 's["subject"][0]["digest"]["sha256"]')
version=$(read_statement 's["predicate"]["buildDefinition"]["externalParameters"]["version"]')
commit=$(read_statement 's["predicate"]["buildDefinition"]["resolvedDependencies"][0]["digest"]["gitCommit"]')
source_uri=$(read_statement 's["predicate"]["buildDefinition"]["externalParameters"]["source"]["uri"]')
[ "$repo" = "$registry/image-reflector" ] \
  || die "$dist was made for $repo, not $registry/image-reflector: make release VERSION=$version REGISTRY=$registry"

key=${COSIGN_KEY:?COSIGN_KEY: the release key (cosign generate-key-pair, or a KMS URI)}
pub=${COSIGN_PUB:-${key%.key}.pub}
[ -f "$pub" ] || die "COSIGN_PUB=$pub: no such file (the public half of COSIGN_KEY, which users verify with)"
SIGTOOLS_BIN_DIR=${SIGTOOLS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-sigtools/bin}
FLUX_BIN_DIR=${FLUX_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-flux/bin}
PATH=$SIGTOOLS_BIN_DIR:$FLUX_BIN_DIR:$PATH
command -v cosign >/dev/null || die "cosign not found: SIGTOOLS=cosign hack/sigtools-build.sh builds it"
command -v flux >/dev/null || die "the flux CLI not found: FLUX_COMPONENTS=flux hack/flux-build.sh builds it"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
skopeo_tls=()
if [ -n "${REGISTRY_CA_FILE:-}" ]; then
  mkdir -p "$work/certs"
  cp "$REGISTRY_CA_FILE" "$work/certs/ca.crt"
  skopeo_tls=(--dest-cert-dir "$work/certs")
  cat /etc/ssl/certs/ca-certificates.crt "$REGISTRY_CA_FILE" > "$work/ca-bundle.crt" 2>/dev/null \
    || cp "$REGISTRY_CA_FILE" "$work/ca-bundle.crt"
  export SSL_CERT_FILE=$work/ca-bundle.crt   # cosign and flux are Go programs
fi
signing=()
[ -z "${COSIGN_SIGNING_CONFIG:-}" ] || signing=(--signing-config "$COSIGN_SIGNING_CONFIG")
if [ ${#signing[@]} = 0 ]; then
  cosign signing-config create --out "$work/signing-config.json" >/dev/null 2>&1
  signing=(--signing-config "$work/signing-config.json")
  verify_tlog=(--insecure-ignore-tlog=true)
else
  verify_tlog=()
fi

# --- the image, byte for byte: the digest pushed is the one install.yaml pins
log "pushing $repo:$version ($digest)"
skopeo copy --quiet --preserve-digests "${skopeo_tls[@]}" \
  "oci-archive:$dist/image-reflector-$version.oci.tar:$version" "docker://$repo:$version"
pushed=$(skopeo inspect --raw "${skopeo_tls[@]/--dest-cert-dir/--cert-dir}" "docker://$repo:$version" | sha256sum | cut -d' ' -f1)
[ "sha256:$pushed" = "$digest" ] || die "the registry holds sha256:$pushed for $repo:$version, not $digest"

# --- the manifests, as Flux publishes flux-manifests
# flux packs a directory itself: the release's packing of the same files must be the layer.
manifests=$repo-manifests
mkdir -p "$work/manifests"
tar -xzf "$dist/manifests.tgz" -C "$work/manifests"
flux push artifact "oci://$manifests:$version" --path "$work/manifests" --source "$source_uri" \
  --revision "$version@sha1:$commit" --reproducible --output json > "$work/manifests.json"
manifests_digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$work/manifests.json")
layer=$(skopeo inspect --raw "${skopeo_tls[@]/--dest-cert-dir/--cert-dir}" "docker://$manifests@$manifests_digest" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
[ "$layer" = "sha256:$(sha256sum < "$dist/manifests.tgz" | cut -d' ' -f1)" ] \
  || die "the pushed manifests layer is $layer, not dist/manifests.tgz: flux packed the files otherwise"
log "pushed $manifests:$version ($manifests_digest)"

# --- signatures and attestations, then verified as a user verifies them
python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["predicate"], sys.stdout)' \
  "$dist/provenance.intoto.json" > "$work/provenance.json"
cosign sign --yes --key "$key" "${signing[@]}" "$repo@$digest" >/dev/null 2>&1 \
  || cosign sign --yes --key "$key" "${signing[@]}" "$repo@$digest"
cosign sign --yes --key "$key" "${signing[@]}" "$manifests@$manifests_digest" >/dev/null 2>&1 \
  || cosign sign --yes --key "$key" "${signing[@]}" "$manifests@$manifests_digest"
cosign attest --yes --key "$key" "${signing[@]}" --type cyclonedx --predicate "$dist/sbom.cdx.json" "$repo@$digest" >/dev/null 2>&1 \
  || cosign attest --yes --key "$key" "${signing[@]}" --type cyclonedx --predicate "$dist/sbom.cdx.json" "$repo@$digest"
cosign attest --yes --key "$key" "${signing[@]}" --type slsaprovenance1 --predicate "$work/provenance.json" "$repo@$digest" >/dev/null 2>&1 \
  || cosign attest --yes --key "$key" "${signing[@]}" --type slsaprovenance1 --predicate "$work/provenance.json" "$repo@$digest"
cosign sign-blob --yes --key "$key" "${signing[@]}" --bundle "$dist/SHA256SUMS.cosign.bundle" \
  "$dist/SHA256SUMS" >/dev/null 2>&1 \
  || cosign sign-blob --yes --key "$key" "${signing[@]}" --bundle "$dist/SHA256SUMS.cosign.bundle" "$dist/SHA256SUMS"
cosign verify-blob --key "$pub" "${verify_tlog[@]}" --bundle "$dist/SHA256SUMS.cosign.bundle" \
  "$dist/SHA256SUMS" >/dev/null 2>&1
cosign verify --key "$pub" "${verify_tlog[@]}" "$repo@$digest" >/dev/null
cosign verify --key "$pub" "${verify_tlog[@]}" "$manifests@$manifests_digest" >/dev/null
cosign verify-attestation --key "$pub" "${verify_tlog[@]}" --type cyclonedx "$repo@$digest" >/dev/null
cosign verify-attestation --key "$pub" "${verify_tlog[@]}" --type slsaprovenance1 "$repo@$digest" >/dev/null
log "signed and attested $repo@$digest and signed SHA256SUMS; cosign verify, verify-attestation and verify-blob accept them"
echo "$repo@$digest"
