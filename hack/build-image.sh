#!/bin/sh
# Builds the controller image from scratch with buildah: no base image is pulled. The root
# filesystem comes from hack/image-rootfs.sh; the image runs as 65532:65532 with the binary as
# entrypoint and `run` as default command, and needs nothing writable but /tmp and /data.
# usage: hack/build-image.sh BINARY IMAGE   (IMAGE lands in containers-storage)
set -eu
bin=$1
image=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
ctr=""
cleanup() {
  [ -z "$ctr" ] || { buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true; }
  rm -rf "$work"
}
trap cleanup EXIT
"$here/image-rootfs.sh" "$bin" "$work/rootfs"
ctr=$(buildah from scratch)
mnt=$(buildah mount "$ctr")
# cp -a keeps modes and owners (/data belongs to 65532, /tmp is 1777).
cp -a "$work/rootfs/." "$mnt/"
buildah umount "$ctr" >/dev/null
version=$("$bin" --version | awk '{print $2}')
buildah config \
  --user 65532:65532 \
  --entrypoint '["/usr/local/bin/image-reflector"]' \
  --cmd run \
  --workingdir / \
  --port 8080 --port 9440 \
  --label org.opencontainers.image.title=image-reflector \
  --label org.opencontainers.image.description="A drop-in replacement for Flux's image-reflector-controller" \
  --label org.opencontainers.image.version="$version" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  "$ctr"
buildah commit --quiet --rm "$ctr" "$image" >/dev/null
ctr=""
echo "built $image ($(buildah images --format '{{.Size}}' "$image" | head -n 1))"
