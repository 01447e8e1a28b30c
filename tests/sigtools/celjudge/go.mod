// Test infrastructure only: cel-go (cel.dev/cel-go, the newest the Go module proxy serves;
// the CEL of Kubernetes, which pins an earlier one), as a judge of the attestation conditions the tests make, built by
// hack/sigtools-build.sh (make sigtools).
module github.com/image-reflector/image-reflector/tests/sigtools/celjudge

go 1.26.0

require cel.dev/cel-go v0.33.4

require (
	cel.dev/expr v0.25.1 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.1 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/exp v0.0.0-20240823005443-9b4947da3948 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
