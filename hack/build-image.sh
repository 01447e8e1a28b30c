#!/bin/sh
# Builds the controller image from scratch with buildah: no base image is pulled. The root
# filesystem comes from hack/image-rootfs.sh; the image runs as 65532:65532 with the binary as
# entrypoint and `run` as default command, and needs nothing writable but /tmp and /data.
# With SOURCE_DATE_EPOCH set (make release), the image is reproducible: see docs/release.md.
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
# IMAGE_ARCH (amd64 when unset): the binary's architecture, which the config records; one
# that cannot run here is asked its version by the emulator (qemu-user-static).
arch=${IMAGE_ARCH:-amd64}
[ "$arch" != arm64 ] || export ROOTFS_SYSROOT=${ROOTFS_SYSROOT:-/usr/aarch64-linux-gnu}
"$here/image-rootfs.sh" "$bin" "$work/rootfs"
ctr=$(buildah from scratch)
mnt=$(buildah mount "$ctr")
# cp -a keeps modes and owners (/data belongs to 65532, /tmp is 1777).
cp -a "$work/rootfs/." "$mnt/"
buildah umount "$ctr" >/dev/null
case "$arch" in
  amd64) version=$("$bin" --version | awk '{print $2}') ;;
  arm64) version=$(qemu-aarch64-static -L "$work/rootfs" "$bin" --version | awk '{print $2}') ;;
  *) echo "build-image: IMAGE_ARCH=$arch: amd64 or arm64" >&2; exit 2 ;;
esac
buildah config --os linux --arch "$arch" "$ctr"
# A release (hack/release.sh) sets SOURCE_DATE_EPOCH and the commit: every file of the layer, the
# history and the config get that time, so one commit gives one image digest.
set --
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  set -- --timestamp "$SOURCE_DATE_EPOCH"
  buildah config --label org.opencontainers.image.created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" "$ctr"
fi
[ -z "${IMAGE_REFLECTOR_COMMIT:-}" ] || buildah config --label org.opencontainers.image.revision="$IMAGE_REFLECTOR_COMMIT" "$ctr"
[ -z "${SOURCE_URI:-}" ] || buildah config --label org.opencontainers.image.source="$SOURCE_URI" "$ctr"
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
buildah commit --quiet --rm "$@" "$ctr" "$image" >/dev/null
ctr=""
echo "built $image ($(buildah images --format '{{.Size}}' "$image" | head -n 1))"
