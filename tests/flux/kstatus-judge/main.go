// Command kstatus-judge is test infrastructure: kstatus (github.com/fluxcd/cli-utils, the fork
// of sigs.k8s.io/cli-utils that Flux's kustomize-controller computes a Kustomization's health
// checks with, and the flux CLI its waits) reads each object it is given and says its status,
// as a health check over that object would.
//
// One object per line of JSON on stdin, one verdict per line on stdout:
//
//	{"status": "Current" | "InProgress" | "Failed" | "Terminating" | ..., "message": "..."}
//
// An object kstatus cannot read gets {"status": "Error", "message": "..."}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		// Read as the API machinery reads objects (integers as int64, as kstatus expects).
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(in.Bytes()); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus-judge: a line is not an object: %v\n", err)
			os.Exit(2)
		}
		var said verdict
		result, err := status.Compute(object)
		if err != nil {
			said = verdict{Status: "Error", Message: err.Error()}
		} else {
			said = verdict{Status: result.Status.String(), Message: result.Message}
		}
		if err := out.Encode(said); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus-judge: %v\n", err)
		os.Exit(2)
	}
}
