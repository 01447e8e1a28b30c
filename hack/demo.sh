#!/bin/sh
# The main job (`make run`): a local Distribution registry with a few tags of demo/app, pushed
# with curl through the registry API; `image-reflector scan` reconciles an ImageRepository and
# an ImagePolicy for it exactly as the controller would and prints their status; then
# `image-reflector select --explain` shows why the policy elected that tag.
# usage: hack/demo.sh BINARY
set -eu
bin=$1
. "$(dirname "$0")/local-registry.sh"

# One blob upload (monolithic POST then PUT), by content.
upload() {
  digest="sha256:$(sha256sum "$1" | cut -d' ' -f1)"
  location=$(curl -sf -X POST -D - -o /dev/null "$registry/v2/demo/app/blobs/uploads/" | tr -d '\r' | awk 'tolower($1)=="location:" {print $2}')
  case "$location" in http*) ;; *) location="$registry$location" ;; esac
  curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$1" "$location&digest=$digest" -o /dev/null
  echo "$digest"
}
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}' > "$work/config.json"
printf 'demo' | gzip -n > "$work/layer.tar.gz"
config=$(upload "$work/config.json")
layer=$(upload "$work/layer.tar.gz")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
  "$config" "$(wc -c < "$work/config.json")" "$layer" "$(wc -c < "$work/layer.tar.gz")" > "$work/manifest.json"
for tag in 5.9.0 6.0.0 6.1.0 6.1.1 6.2.0-rc.1 6.2.0 latest sha256-2f4e.sig; do
  curl -sf -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
    --data-binary "@$work/manifest.json" "$registry/v2/demo/app/manifests/$tag" -o /dev/null
done
echo "# a local registry at 127.0.0.1:$port holds demo/app with 8 tags; the scan keeps 7:"
echo "# an ImageRepository without spec.exclusionList excludes ^.*\\.sig\$ (cosign's signature"
echo "# tags), as Flux's does; status.observedExclusionList shows the list in force"

cat > "$work/repository.yaml" <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: app
  namespace: demo
spec:
  image: 127.0.0.1:$port/demo/app
  interval: 5m
YAML
cat > "$work/policy.yaml" <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: app
  namespace: demo
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: 6.x
  digestReflectionPolicy: IfNotPresent
YAML
echo "# image-reflector scan -f repository.yaml -f policy.yaml   (the controller's reconciles, offline)"
"$bin" scan -f "$work/repository.yaml" -f "$work/policy.yaml" --storage-path "$work/store"
echo
echo "# image-reflector scan -o yaml: the status the controller would write"
"$bin" scan -f "$work/repository.yaml" -f "$work/policy.yaml" --storage-path "$work/store" -o yaml
echo
echo "# image-reflector select --explain: why the policy elected that tag"
# The store keeps a list compact (tags.fc.gz), or plain when it is a few tags (tags.txt).
tags=$(ls "$work"/store/imagerepository/demo/app/tags.* | head -n 1)
"$bin" select -f "$work/policy.yaml" --tags-file "$tags" --explain
