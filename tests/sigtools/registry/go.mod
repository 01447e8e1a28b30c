// Test infrastructure only: a registry that serves the OCI referrers API (go-containerregistry's
// registry package, in memory), built by hack/sigtools-build.sh (make sigtools). Debian's
// Distribution 2.8 has no referrers API; the signature tests push to this one where they need it.
module github.com/image-reflector/image-reflector/tests/sigtools/registry

go 1.26.0

require github.com/google/go-containerregistry v0.21.7
