// Test infrastructure only: Trillian's log server and sequencer over its in-memory storage in
// one process of ours, built by hack/sigtools-build.sh (make sigtools), the log Rekor v1 writes
// to during make e2e-signatures.
module github.com/image-reflector/image-reflector/tests/sigtools/trillian

go 1.26.0

require (
	github.com/google/trillian v1.7.3
	google.golang.org/grpc v1.79.3
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/golang/mock v1.7.0-rc.1 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/transparency-dev/merkle v0.0.2 // indirect
	golang.org/x/net v0.52.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/text v0.35.0 // indirect
	google.golang.org/genproto v0.0.0-20260217215200-42d3e9bedb6d // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260316180232-0b37fe3546d5 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
