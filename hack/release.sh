#!/usr/bin/env bash
# `make release VERSION=vX.Y.Z [REPO=...] [DIST=dist]`: the release of the commit checked out,
# written to DIST (docs/release.md lists the files):
#   image-reflector-linux-amd64           the release binary (--version names VERSION and the commit),
#   image-reflector-linux-arm64           and with PLATFORMS="linux/amd64 linux/arm64" the arm64 one
#                                         (the image is then an index of both)
#   image-reflector-VERSION.oci.tar       the image, an OCI layout as a tar (skopeo/podman: oci-archive:)
#   install.yaml                          config/default with the image pinned as REPO@digest
#   crds.yaml                             the two CustomResourceDefinitions
#   flux/                                 a kustomize Component that swaps Flux's controller (bootstrap's
#                                         gotk-components) for ours, and flux-instance-patches.yaml
#   manifests.tgz                         install.yaml, crds.yaml and flux/ as Flux's `flux build
#                                         artifact` packs them (release-push pushes it as flux-manifests)
#   sbom.cdx.json                         CycloneDX SBOM of the binary's crates (cargo-cyclonedx)
#   provenance.intoto.json                SLSA provenance v1 statement about the binary and the image
#   SHA256SUMS                            of every file above
# Reproducible: a clean tree, paths remapped, the commit's time as SOURCE_DATE_EPOCH; the
# image's files and the archives carry that time and sorted names; two runs of one commit in
# two checkouts give the same SHA256SUMS (hack/release-check.sh, docs/release.md).
set -euo pipefail
version=${1:?usage: hack/release.sh VERSION REPO DIST}
repo=${2:?usage: hack/release.sh VERSION REPO DIST}
dist=${3:?usage: hack/release.sh VERSION REPO DIST}
root=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$root"
log() { echo "release: $*" >&2; }
die() { log "$*"; exit 1; }

# --- what is released: a tagged-looking VERSION that is the crate's, of a clean commit
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
  || die "VERSION=$version is not vMAJOR.MINOR.PATCH[-PRE] (make release VERSION=v$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1))"
crate=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ "$version" = "v$crate" ] \
  || die "VERSION=$version but Cargo.toml's version is $crate: set version = \"${version#v}\" in Cargo.toml (and Cargo.lock) and commit, or release v$crate"
[[ $repo =~ ^[a-z0-9.:-]+(/[a-z0-9._-]+)+$ ]] || die "REPO=$repo is not a registry/path image name (registry.example.com/platform/image-reflector)"
dirty=$(git status --porcelain 2>/dev/null) || die "$root is not a git checkout: a release names the commit it was built from"
[ -z "$dirty" ] || die "uncommitted or untracked changes in $root (git status); a release is built from a commit and names it: commit or stash them first"
commit=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct "$commit")
# The project's source, as the image label and the provenance name it: not this checkout's
# remote (a clone's is a path, and would make two checkouts' releases differ).
source_uri=${SOURCE_URI:-https://github.com/image-reflector/image-reflector}
export SOURCE_DATE_EPOCH SOURCE_URI=$source_uri IMAGE_REFLECTOR_VERSION=$version IMAGE_REFLECTOR_COMMIT=$commit
# Sorted names and one time wherever a tool asks the locale or the clock.
export LC_ALL=C TZ=UTC
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# DIST is replaced only when it is a release already (its SHA256SUMS) or empty: DIST=. must
# not take the checkout with it.
if [ -e "$dist" ] && [ ! -f "$dist/SHA256SUMS" ] && [ -n "$(ls -A "$dist" 2>/dev/null)" ]; then
  die "DIST=$dist exists and holds no release (no SHA256SUMS): give an empty or new directory"
fi
rm -rf "$dist"
mkdir -p "$dist/flux"
dist=$(cd "$dist" && pwd)

# --- the binaries: built here (the tree is clean: what is built is the commit), into the
# checkout's target/ or RELEASE_TARGET_DIR, with the paths rustc would embed remapped
# (/cargo, /target; our own sources are named relative to the checkout already), so the
# binary names no path of this machine and two checkouts build the same bytes. `make image`
# builds with the same flags (Makefile), so a release after it compiles only this crate again.
src=$root
cargo_home=${CARGO_HOME:-$HOME/.cargo}
export CARGO_TARGET_DIR=${RELEASE_TARGET_DIR:-$root/target}
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd)
export RUSTFLAGS="--remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$CARGO_TARGET_DIR=/target"
platforms=${PLATFORMS:-linux/amd64}
triple_of() {
  case "$1" in
    linux/amd64) echo x86_64-unknown-linux-gnu ;;
    linux/arm64) echo aarch64-unknown-linux-gnu ;;
    *) die "PLATFORMS: $1 is not linux/amd64 or linux/arm64" ;;
  esac
}
for platform in $platforms; do
  triple=$(triple_of "$platform")
  if [ "$platform" = linux/arm64 ]; then
    # A cross build: rustup's standard library for the target, Debian's cross gcc as the linker
    # (and for ring's C), its sysroot's libraries in the image, qemu-user-static to run it.
    rustup target list --installed 2>/dev/null | grep -qx "$triple" || die "no standard library for $triple: rustup target add $triple"
    for tool in aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu qemu-aarch64-static:qemu-user-static; do
      command -v "${tool%%:*}" >/dev/null || die "${tool%%:*} not found: apt-get install ${tool##*:} libc6-dev-arm64-cross"
    done
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
      CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
  fi
  log "building $version ($commit) for $platform into $CARGO_TARGET_DIR"
  # The host's platform without --target, as `make image` builds it (its compiled crates are
  # shared); another with its own.
  out=$CARGO_TARGET_DIR/release
  cross=()
  [ "$triple" = "$(rustc -vV | sed -n 's/^host: //p')" ] || { cross=(--target "$triple"); out=$CARGO_TARGET_DIR/$triple/release; }
  (cd "$src" && cargo build --release --locked --quiet "${cross[@]}")
  arch=${platform#linux/}
  bin=$dist/image-reflector-linux-$arch
  cp "$out/image-reflector" "$bin"
  run=()
  [ "$arch" = amd64 ] || run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
  said=$("${run[@]}" "$bin" --version)
  [ "$said" = "image-reflector $version (commit $commit)" ] || die "the $arch binary says '$said', not $version at $commit"
  # The image of this platform, from scratch, every file at SOURCE_DATE_EPOCH.
  IMAGE_ARCH=$arch "$src/hack/build-image.sh" "$bin" "localhost/image-reflector-release:$version-$arch" >&2
done

# --- the image (one platform) or the index of the platforms' images, as an OCI layout
list=localhost/image-reflector-release:$version
buildah manifest rm "$list" >/dev/null 2>&1 || true
if [ "$(echo $platforms | wc -w)" = 1 ]; then
  skopeo copy --quiet "containers-storage:$list-${platforms#linux/}" "oci:$work/oci:$version"
else
  buildah manifest create "$list" >/dev/null
  for platform in $platforms; do
    buildah manifest add "$list" "containers-storage:$list-${platform#linux/}" >/dev/null
  done
  buildah manifest push --quiet --all --format oci "$list" "oci:$work/oci:$version"
  buildah manifest rm "$list" >/dev/null
fi
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$work/oci/index.json")
pack() { # DIR OUT: a tar of DIR's contents, sorted, owned by 0, at SOURCE_DATE_EPOCH
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$1" -cf "$2" .
}
pack "$work/oci" "$dist/image-reflector-$version.oci.tar"
log "image $repo@$digest"

# --- the manifests: config/default pinned by digest, the CRDs, the Flux swaps
"$src/hack/release-manifests.sh" "$dist/image-reflector-linux-amd64" "$repo" "$digest" "$dist"

# --- the SBOM (cargo-cyclonedx, pinned in hack/release-tools.sh) and the provenance
"$src/hack/release-tools.sh" sbom "$work/sbom"
cp "$work/sbom" "$dist/sbom.cdx.json"
# The tag VERSION, when it names this commit; else the provenance names no ref (a release of an
# untagged commit says so).
source_ref=""
if [ "$(git -C "$src" rev-parse -q --verify "refs/tags/$version^{commit}" 2>/dev/null)" = "$commit" ]; then
  source_ref="refs/tags/$version"
else
  log "no tag $version names $commit: the provenance names the commit alone"
fi
python3 "$src/hack/release-provenance.py" --version "$version" --commit "$commit" --source "$source_uri" --ref "$source_ref" \
  --repo "$repo" --image-digest "$digest" --binaries "$dist" --lock "$src/Cargo.lock" \
  --rustc "$(rustc -vV | paste -sd ';')" --cargo "$(cargo -V)" --rustflags "--remap-path-prefix=<CARGO_HOME>=/cargo --remap-path-prefix=<target dir>=/target" \
  --epoch "$SOURCE_DATE_EPOCH" --sbom "$dist/sbom.cdx.json" > "$dist/provenance.intoto.json"

(cd "$dist" && find . -type f ! -name SHA256SUMS | sed 's#^\./##' | sort | xargs sha256sum > SHA256SUMS)
log "wrote $dist ($version, $commit, image $digest)"
echo "$digest"
