// Test infrastructure only: a TUF repository of Sigstore's shape, made with go-tuf's metadata
// API and served on loopback (hack/sigtools-build.sh, make sigtools), that the controller's TUF
// client is tested against.
module github.com/image-reflector/image-reflector/tests/sigtools/tufrepo

go 1.26.0

require (
	github.com/sigstore/sigstore v1.10.8
	github.com/theupdateframework/go-tuf/v2 v2.4.2
)

require (
	github.com/google/go-containerregistry v0.20.7 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/secure-systems-lab/go-securesystemslib v0.11.0 // indirect
	github.com/sigstore/protobuf-specs v0.5.0 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	golang.org/x/crypto v0.50.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/term v0.42.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
