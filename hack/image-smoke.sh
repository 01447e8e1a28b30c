#!/bin/sh
# Pushes IMAGE to a local Distribution registry and runs it from there as a user would: with
# podman and runc (read-only root filesystem, the image's own user), or, where no container can
# start, unpacked with umoci and run under chroot as uid 65532. Either way
# `image-reflector run --help` must work with only what the image holds, and the binary in the
# image must list the tags of the registry it came from (network, TLS stack, registry client).
# usage: hack/image-smoke.sh IMAGE
set -eu
image=$1
. "$(dirname "$0")/local-registry.sh"
ref="127.0.0.1:$port/image-reflector:smoke"
skopeo copy --quiet --dest-tls-verify=false "containers-storage:$image" "docker://$ref"
echo "pushed $ref"

config=$(skopeo inspect --config --tls-verify=false "docker://$ref")
echo "$config" | grep -q '"User": "65532:65532"' || { echo "image user is not 65532:65532: $config" >&2; exit 1; }
echo "$config" | grep -q '"/usr/local/bin/image-reflector"' || { echo "entrypoint is not the binary: $config" >&2; exit 1; }

check() {
  echo "$1" | grep -q -- '--metrics-addr' || { echo "unexpected output of run --help: $1" >&2; exit 1; }
}
check_tags() {
  [ "$1" = "smoke" ] || { echo "the image's binary listed '$1', not the tag 'smoke'" >&2; exit 1; }
}
podman_run() {
  podman --runtime runc run --rm --read-only --network host \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --tls-verify=false "$ref" "$@"
}
if out=$(podman_run run --help 2> "$work/podman.err"); then
  check "$out"
  check_tags "$(podman_run tags "127.0.0.1:$port/image-reflector")"
  echo "image-smoke: ok (podman + runc, read-only root filesystem, user 65532; listed its own registry)"
  exit 0
fi
echo "image-smoke: podman could not run the image here ($(tail -n 1 "$work/podman.err")); unpacking it with umoci and running it under chroot" >&2
skopeo copy --quiet --src-tls-verify=false "docker://$ref" "oci:$work/layout:smoke"
umoci unpack --image "$work/layout:smoke" "$work/bundle" >/dev/null
in_image() { chroot --userspec=65532:65532 "$work/bundle/rootfs" /usr/local/bin/image-reflector "$@"; }
check "$(in_image run --help)"
check_tags "$(in_image tags "127.0.0.1:$port/image-reflector")"
echo "image-smoke: ok (umoci + chroot as 65532; listed its own registry)"
