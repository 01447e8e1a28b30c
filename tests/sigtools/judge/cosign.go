package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	rekorv1 "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// CosignCase is a Sigstore bundle and a policy's spec.verify (provider cosign).
type CosignCase struct {
	Bundle      string     `json:"bundle"`
	TrustedRoot string     `json:"trustedRoot,omitempty"`
	Keys        []string   `json:"keys,omitempty"`
	Identities  []Identity `json:"identities,omitempty"`
	RequireTlog bool       `json:"requireTlog"`
	Digest      string     `json:"digest"`
	// Artifact, when set, is what the bundle signs (a sigstore-conformance case): verified on
	// its bytes, as the suite's clients verify it, a statement of any predicate counting.
	Artifact []byte `json:"artifact,omitempty"`
}

// Identity is one matchOIDCIdentity: regular expressions, unanchored as Go's and ours are.
type Identity struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

func judgeCosign(c *CosignCase) error {
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON([]byte(c.Bundle)); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	hexDigest, ok := strings.CutPrefix(c.Digest, "sha256:")
	if !ok {
		return errors.New("digest is not sha256")
	}
	digest, err := hex.DecodeString(hexDigest)
	if err != nil {
		return err
	}
	artifact := verify.WithArtifactDigest("sha256", digest)
	counts := isSignature
	if c.Artifact != nil {
		artifact = verify.WithArtifact(bytes.NewReader(c.Artifact))
		counts = func(*verify.VerificationResult) error { return nil }
	}
	content, err := b.VerificationContent()
	if err != nil {
		return err
	}
	if content.Certificate() == nil {
		return judgeKeyed(b, artifact, c.Keys, counts)
	}
	if len(c.Identities) == 0 {
		return errors.New("a certificate, and the policy trusts keys only")
	}
	trusted, err := root.NewTrustedRootFromJSON([]byte(c.TrustedRoot))
	if err != nil {
		return fmt.Errorf("trusted root: %w", err)
	}
	// transparencyLog: Required is a log entry with its integrated time, or, as cosign v3
	// decides it (pkg/cosign/verify_bundle.go), when every entry is Rekor v2's (no integrated
	// time) a timestamp of a timestamp authority instead; Optional checks the entries a bundle
	// carries as Required does, and judges one without entries at the current time
	// (sigstore-go would ignore the entries under WithCurrentTime alone).
	entries := b.VerificationMaterial.GetTlogEntries()
	options := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithIntegratedTimestamps(1)}
	if onlyRekorV2(entries) {
		options = []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithSignedTimestamps(1)}
	}
	if !c.RequireTlog && len(entries) == 0 {
		options = []verify.VerifierOption{verify.WithCurrentTime()}
	}
	// A sigstore-conformance case is verified as sigstore-go's own client of the suite
	// (cmd/conformance) verifies it: a bundle's signed timestamps are checked too when the
	// trusted root names timestamp authorities.
	if stamps, _ := b.Timestamps(); c.Artifact != nil && !onlyRekorV2(entries) &&
		len(trusted.TimestampingAuthorities()) > 0 && len(stamps) > 0 {
		options = append(options, verify.WithSignedTimestamps(1))
	}
	// cosign asks a keyless certificate for an SCT unless --insecure-ignore-sct; the controller
	// asks for one when the trusted root names a CT log, and takes a root without any as that
	// flag (docs/compatibility.md).
	if len(trusted.CTLogs()) > 0 {
		options = append(options, verify.WithSignedCertificateTimestamps(1))
	}
	verifier, err := verify.NewVerifier(trusted, options...)
	if err != nil {
		return err
	}
	policy := []verify.PolicyOption{}
	for _, id := range c.Identities {
		certID, err := verify.NewShortCertificateIdentity("", id.Issuer, "", id.Subject)
		if err != nil {
			return fmt.Errorf("identity: %w", err)
		}
		policy = append(policy, verify.WithCertificateIdentity(certID))
	}
	result, err := verifier.Verify(b, verify.NewPolicy(artifact, policy...))
	if err != nil {
		return err
	}
	return counts(result)
}

// signingPredicate is what `cosign sign` (v3) writes in its statement. The controller counts a
// DSSE bundle as a signature only with this predicate (docs/compatibility.md: an attestation is
// not a signature), where `cosign verify` takes any; the judge applies that documented rule
// on top of sigstore-go's verdict.
const signingPredicate = "https://sigstore.dev/cosign/sign/v1"

func isSignature(result *verify.VerificationResult) error {
	if result.Statement == nil || result.Statement.GetPredicateType() == signingPredicate {
		return nil
	}
	return fmt.Errorf("an attestation (%q), not a signature", result.Statement.GetPredicateType())
}

// judgeKeyed: valid when one of the keys verifies, with the hash Sigstore pairs with its type
// (the log is not consulted for a key's signature, as the controller documents).
func judgeKeyed(b *bundle.Bundle, artifact verify.ArtifactPolicyOption, keys []string, counts func(*verify.VerificationResult) error) error {
	if len(keys) == 0 {
		return errors.New("no trusted key")
	}
	var why []error
	for _, pem := range keys {
		public, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(pem))
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		loaded, err := signature.LoadDefaultVerifier(public)
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(loaded, time.Time{}, time.Time{}), nil
		})
		verifier, err := verify.NewVerifier(material, verify.WithCurrentTime())
		if err != nil {
			return err
		}
		result, err := verifier.Verify(b, verify.NewPolicy(artifact, verify.WithKey()))
		if err == nil {
			return counts(result)
		}
		why = append(why, err)
	}
	return errors.Join(why...)
}

// onlyRekorV2: the bundle has log entries and none has an integrated time (Rekor v2 writes
// none), cosign's test for requiring a signed timestamp.
func onlyRekorV2(entries []*rekorv1.TransparencyLogEntry) bool {
	for _, e := range entries {
		if e.GetIntegratedTime() != 0 {
			return false
		}
	}
	return len(entries) > 0
}
