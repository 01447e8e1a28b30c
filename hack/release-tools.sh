#!/usr/bin/env bash
# Tools a release needs beyond make kube, make flux and make sigtools, pinned here and built from
# crates.io into a cache outside the work tree (RELEASE_TOOLS_DIR):
#   cargo-cyclonedx, CycloneDX's own SBOM generator for Cargo projects.
#
#   hack/release-tools.sh            install what is missing; print RELEASE_TOOLS_DIR/bin
#   hack/release-tools.sh sbom OUT   the SBOM of the binary's crates (for x86_64-unknown-linux-gnu,
#                                    no build-time ones) as CycloneDX 1.5 JSON in OUT
set -euo pipefail
CYCLONEDX_VERSION=0.5.9
RELEASE_TOOLS_DIR=${RELEASE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-release}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$RELEASE_TOOLS_DIR/bin

have() { [ -x "$bin/cargo-cyclonedx" ] && "$bin/cargo-cyclonedx" cyclonedx --version 2>/dev/null | grep -q " $CYCLONEDX_VERSION\$"; }
if ! have; then
  echo "release-tools: installing cargo-cyclonedx $CYCLONEDX_VERSION into $RELEASE_TOOLS_DIR" >&2
  cargo install --quiet --locked --version "$CYCLONEDX_VERSION" --root "$RELEASE_TOOLS_DIR" cargo-cyclonedx
fi

case "${1:-}" in
  "") echo "$bin" ;;
  sbom)
    out=${2:?usage: hack/release-tools.sh sbom OUT}
    # cargo-cyclonedx writes beside Cargo.toml; the file is moved out at once.
    name=sbom-$$
    trap 'rm -f "$root/$name.json"' EXIT
    (cd "$root" && PATH=$bin:$PATH cargo cyclonedx --format json --spec-version 1.5 \
      --target x86_64-unknown-linux-gnu --no-build-deps --override-filename "$name" >/dev/null)
    python3 "$root/hack/release-sbom.py" "$root/$name.json" "$root" > "$out"
    ;;
  *) echo "usage: hack/release-tools.sh [sbom OUT]" >&2; exit 2 ;;
esac
