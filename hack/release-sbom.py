#!/usr/bin/env python3
"""The release's SBOM as cargo-cyclonedx wrote it, made reproducible (on stdout).

cargo-cyclonedx gives each run a random serial number and the wall clock as its timestamp.
CycloneDX asks that one serial number name one BOM: here one BOM is one commit's, so the serial
number is a UUID (v5) of the commit, the timestamp is the commit's time (SOURCE_DATE_EPOCH),
and the crate's own path is /src. The components, their hashes and licenses are cargo-cyclonedx's, untouched.
usage: release-sbom.py BOM.json SOURCE_DIR   (SOURCE_DATE_EPOCH and IMAGE_REFLECTOR_COMMIT set)
"""

import datetime
import json
import os
import sys
import uuid


def main():
    with open(sys.argv[1]) as f:
        text = f.read()
    # The crate's own bom-refs name the checkout (path+file:///...#image-reflector@...): the
    # release's build place, remapped to /src as the binary's paths are.
    text = text.replace("file://" + sys.argv[2].rstrip("/"), "file:///src")
    bom = json.loads(text)
    commit = os.environ["IMAGE_REFLECTOR_COMMIT"]
    epoch = int(os.environ["SOURCE_DATE_EPOCH"])
    if bom.get("bomFormat") != "CycloneDX" or "components" not in bom:
        sys.exit("release-sbom: %s is not a CycloneDX BOM with components" % sys.argv[1])
    bom["serialNumber"] = "urn:uuid:%s" % uuid.uuid5(uuid.NAMESPACE_URL, "image-reflector@" + commit)
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    bom.setdefault("metadata", {})["timestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    json.dump(bom, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
