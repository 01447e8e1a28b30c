// Command judge is test infrastructure: it gives the verdict of Sigstore's and the Notary
// Project's own verifiers (sigstore-go, notation-go) on the signature cases the integration
// tests make, so that the controller's verdicts can be compared with theirs
// (tests/it/signatures/oracle.rs, make e2e-signatures).
//
// It reads one case per line of JSON on stdin and writes one verdict per line on stdout:
//
//	{"id": "...", "valid": true|false, "reason": "..."}
//
// A case maps the controller's policy onto the reference verifier's options as
// docs/compatibility.md ("Signatures judged by the reference verifiers") describes.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// Case is one signature and what the policy trusts, as the tests write it.
type Case struct {
	ID       string        `json:"id"`
	Provider string        `json:"provider"`
	Cosign   *CosignCase   `json:"cosign,omitempty"`
	Notation *NotationCase `json:"notation,omitempty"`
}

// Verdict is the reference verifier's answer on one case.
type Verdict struct {
	ID     string `json:"id"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c Case
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "judge: a case is not JSON: %v\n", err)
			os.Exit(2)
		}
		var err error
		switch {
		case c.Cosign != nil:
			err = judgeCosign(c.Cosign)
		case c.Notation != nil:
			err = judgeNotation(c.Notation)
		default:
			fmt.Fprintf(os.Stderr, "judge: case %s names no provider\n", c.ID)
			os.Exit(2)
		}
		v := Verdict{ID: c.ID, Valid: err == nil}
		if err != nil {
			v.Reason = err.Error()
		}
		if err := out.Encode(v); err != nil {
			fmt.Fprintf(os.Stderr, "judge: %v\n", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "judge: reading cases: %v\n", err)
		os.Exit(2)
	}
}
