package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/dir"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// NotationCase is a notation envelope and a policy's spec.verify (provider notation): the
// Secret's trustpolicy.json and its CA certificates, which every trust store the policy names
// holds (the Secret has no store names, as Flux's OCIRepository takes it).
type NotationCase struct {
	MediaType    string             `json:"mediaType"`
	Envelope     []byte             `json:"envelope"`
	TrustPolicy  string             `json:"trustPolicy"`
	Certificates []string           `json:"certificates"`
	Reference    string             `json:"reference"`
	Descriptor   ocispec.Descriptor `json:"descriptor"`
}

func judgeNotation(c *NotationCase) error {
	var policy trustpolicy.Document
	if err := json.Unmarshal([]byte(c.TrustPolicy), &policy); err != nil {
		return fmt.Errorf("trust policy: %w", err)
	}
	home, err := os.MkdirTemp("", "judge-notation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	for _, statement := range policy.TrustPolicies {
		for _, store := range statement.TrustStores {
			kind, name, ok := strings.Cut(store, ":")
			if !ok || strings.ContainsAny(name, "/.") && !validName(name) {
				continue // the policy's validation names it
			}
			path := filepath.Join(home, dir.X509TrustStoreDir(kind, name))
			if err := os.MkdirAll(path, 0o700); err != nil {
				return err
			}
			for i, pem := range c.Certificates {
				file := filepath.Join(path, fmt.Sprintf("cert-%d.pem", i))
				if err := os.WriteFile(file, []byte(pem), 0o600); err != nil {
					return err
				}
			}
		}
	}
	store := truststore.NewX509TrustStore(dir.NewSysFS(home))
	v, err := verifier.New(&policy, store, nil)
	if err != nil {
		return fmt.Errorf("trust policy: %w", err)
	}
	opts := notation.VerifierVerifyOptions{ArtifactReference: c.Reference, SignatureMediaType: c.MediaType}
	if len(c.Envelope) == 0 {
		skipper, ok := v.(interface {
			SkipVerify(context.Context, notation.VerifierVerifyOptions) (bool, *trustpolicy.VerificationLevel, error)
		})
		if !ok {
			return errors.New("notation-go's verifier cannot tell skip")
		}
		skip, _, err := skipper.SkipVerify(context.Background(), opts)
		if err != nil {
			return err
		}
		if !skip {
			return errors.New("no signature")
		}
		return nil
	}
	_, err = v.Verify(context.Background(), c.Descriptor, c.Envelope, opts)
	return err
}

// validName is notation's rule for a trust store's name.
func validName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return name != ""
}
