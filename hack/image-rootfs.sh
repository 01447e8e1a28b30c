#!/bin/sh
# Assembles the container image's root filesystem in OUT from a release binary:
#   the binary (entrypoint /usr/local/bin/image-reflector), exactly the shared libraries it
#   links (from ldd) and the dynamic loader, a CA bundle built from Debian's ca-certificates
#   Mozilla set (not the machine's own /etc/ssl bundle), /etc/passwd and /etc/group with the
#   nonroot user 65532, /etc/hosts, /etc/nsswitch.conf, and /tmp and /data for the
#   Deployment's emptyDir mounts. Used by `make image` (buildah) and the Dockerfile alike.
# ROOTFS_SYSROOT=/usr/aarch64-linux-gnu: the binary is of another architecture (make release
# PLATFORMS=...), its libraries come from that sysroot.
# usage: hack/image-rootfs.sh BINARY OUT
set -eu
bin=$1
out=$2
mozilla=/usr/share/ca-certificates/mozilla
[ -x "$bin" ] || { echo "image-rootfs: $bin is not an executable (cargo build --release)" >&2; exit 1; }
[ -d "$mozilla" ] || { echo "image-rootfs: $mozilla is missing (apt-get install ca-certificates)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/tmp" "$out/data"
install -m 0755 "$bin" "$out/usr/local/bin/image-reflector"

# The libraries ldd resolves ("name => /path (addr)") and the loader ("/path (addr)").
if [ -z "${ROOTFS_SYSROOT:-}" ]; then
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
while read -r lib; do
  mkdir -p "$out$(dirname "$lib")"
  cp -L "$lib" "$out$lib"
done
else
  # Another architecture's binary (ldd cannot run it): its loader and the libraries it names
  # (readelf), from that architecture's sysroot (Debian's libc6-<arch>-cross), put where
  # Debian puts them: /lib/<triplet>/, the loader in /lib.
  triplet=$(basename "$ROOTFS_SYSROOT")
  loader=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  [ -n "$loader" ] || { echo "image-rootfs: $bin names no program interpreter" >&2; exit 1; }
  mkdir -p "$out$(dirname "$loader")" "$out/lib/$triplet"
  cp -L "$ROOTFS_SYSROOT/lib/$(basename "$loader")" "$out$loader"
  for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -f "$ROOTFS_SYSROOT/lib/$lib" ] || { echo "image-rootfs: $lib is not in $ROOTFS_SYSROOT/lib" >&2; exit 1; }
    cp -L "$ROOTFS_SYSROOT/lib/$lib" "$out/lib/$triplet/$lib"
  done
fi

# One PEM bundle of the Mozilla CA set, where rustls' native roots look first.
cat "$mozilla"/*.crt > "$out/etc/ssl/certs/ca-certificates.crt"

printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$out/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$out/etc/group"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$out/etc/hosts"
printf 'hosts: files dns\n' > "$out/etc/nsswitch.conf"
chmod 1777 "$out/tmp"
chown 65532:65532 "$out/data" 2>/dev/null || true
chmod 0700 "$out/data"
