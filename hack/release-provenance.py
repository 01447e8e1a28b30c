#!/usr/bin/env python3
"""The SLSA provenance v1 statement of a release (hack/release.sh), on stdout.

An in-toto Statement v1 whose subjects are the image (by its manifest digest) and the binaries,
and whose predicate (https://slsa.dev/provenance/v1) records what a rebuild needs: the source
commit, the lock file's digest, the toolchain, the flags and the command. It carries no wall
clock time (the build's only time is SOURCE_DATE_EPOCH), so two builds of one commit write the
same statement. `make release-push` attaches the predicate with `cosign attest --type
slsaprovenance1`; an ImagePolicy's `verify.attestations` can require it (docs/release.md).
"""

import argparse
import hashlib
import json
import os
import sys

BUILD_TYPE = "https://github.com/image-reflector/image-reflector/blob/main/docs/release.md#provenance"


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    p = argparse.ArgumentParser()
    for flag in ("version", "commit", "source", "repo", "image-digest", "binaries", "lock",
                 "rustc", "cargo", "rustflags", "epoch", "sbom"):
        p.add_argument("--" + flag, required=True)
    # The tag that names the commit (refs/tags/VERSION), or "" when none does: the provenance
    # then names the source by its commit alone, never by a ref that does not hold it.
    p.add_argument("--ref", required=True)
    a = p.parse_args()
    if not a.image_digest.startswith("sha256:"):
        sys.exit("release-provenance: --image-digest must be sha256:<hex>")
    source = a.source if a.source.startswith("git+") else "git+" + a.source
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [
            {"name": a.repo, "digest": {"sha256": a.image_digest.removeprefix("sha256:")}},
        ] + [
            {"name": name, "digest": {"sha256": sha256(os.path.join(a.binaries, name))}}
            for name in sorted(os.listdir(a.binaries)) if name.startswith("image-reflector-linux-")
        ],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "version": a.version,
                    "repository": a.repo,
                    "source": {"uri": source, **({"ref": a.ref} if a.ref else {})},
                },
                "internalParameters": {
                    "command": "make release VERSION=%s REPO=%s" % (a.version, a.repo),
                    "rustc": a.rustc,
                    "cargo": a.cargo,
                    "rustflags": a.rustflags,
                    "sourceDateEpoch": int(a.epoch),
                },
                "resolvedDependencies": [
                    {"uri": source + ("@" + a.ref if a.ref else ""), "digest": {"gitCommit": a.commit}},
                    {"name": "Cargo.lock", "digest": {"sha256": sha256(a.lock)}},
                ],
            },
            "runDetails": {
                "builder": {"id": BUILD_TYPE.split("#")[0] + "#make-release"},
                "metadata": {"invocationId": "%s@%s" % (a.version, a.commit)},
                "byproducts": [
                    {"name": "sbom.cdx.json", "digest": {"sha256": sha256(a.sbom)},
                     "mediaType": "application/vnd.cyclonedx+json"},
                ],
            },
        },
    }
    json.dump(statement, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
