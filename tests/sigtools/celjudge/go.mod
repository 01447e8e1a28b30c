// Test infrastructure only: cel-go, the CEL of Kubernetes (v0.26.0, as Kubernetes v1.34 pins
// it), as a judge of the attestation conditions the tests make, built by
// hack/sigtools-build.sh (make sigtools).
module github.com/image-reflector/image-reflector/tests/sigtools/celjudge

go 1.26.0

require github.com/google/cel-go v0.26.0

require (
	cel.dev/expr v0.24.0 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.0 // indirect
	github.com/stoewer/go-strcase v1.2.0 // indirect
	golang.org/x/exp v0.0.0-20230515195305-f3d0a9c9a5cc // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240826202546-f6391c0de4c7 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
)
