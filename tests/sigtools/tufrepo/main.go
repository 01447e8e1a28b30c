// Command tufrepo is test infrastructure: it makes a TUF repository with go-tuf's metadata API
// (the Update Framework's reference implementation in Go) that serves one target,
// trusted_root.json, as Sigstore's TUF repository does, and serves a repository's directory on
// loopback. The controller's TUF client (src/registry/sigstore/) is tested against it.
//
//	tufrepo make DIR TRUSTED_ROOT [rotate] [expired-timestamp]
//	    writes the metadata into DIR as Sigstore's repository lays it out (1.root.json, and
//	    2.root.json signed by the old and the new root key when rotate; N.targets.json,
//	    N.snapshot.json, timestamp.json, consistent snapshots) and the target under
//	    DIR/targets/<sha256>.trusted_root.json; DIR/anchor.json is the first root, the client's
//	    trust anchor. expired-timestamp: the timestamp role expired an hour ago.
//	tufrepo serve DIR
//	    serves DIR on 127.0.0.1 at a free port and prints the address.
package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

func main() {
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: tufrepo make DIR TRUSTED_ROOT [rotate] [expired-timestamp] | tufrepo serve DIR"))
	}
	switch os.Args[1] {
	case "make":
		if len(os.Args) < 4 {
			fail(fmt.Errorf("tufrepo make DIR TRUSTED_ROOT"))
		}
		flags := map[string]bool{}
		for _, f := range os.Args[4:] {
			flags[f] = true
		}
		fail(makeRepository(os.Args[2], os.Args[3], flags["rotate"], flags["expired-timestamp"]))
	case "serve":
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		fail(err)
		fmt.Println(listener.Addr().String())
		fail(http.Serve(listener, http.FileServer(http.Dir(os.Args[2]))))
	default:
		fail(fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tufrepo:", err)
		os.Exit(1)
	}
}

func key() (ed25519.PrivateKey, *metadata.Key, signature.Signer) {
	_, private, err := ed25519.GenerateKey(nil)
	fail(err)
	public, err := metadata.KeyFromPublicKey(private.Public())
	fail(err)
	signer, err := signature.LoadSigner(private, crypto.Hash(0))
	fail(err)
	return private, public, signer
}

func makeRepository(dir, trustedRoot string, rotate, expiredTimestamp bool) error {
	meta := dir
	targetsDir := filepath.Join(dir, "targets")
	for _, d := range []string{meta, targetsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	content, err := os.ReadFile(trustedRoot)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(content)
	target := filepath.Join(targetsDir, hex.EncodeToString(sum[:])+".trusted_root.json")
	if err := os.WriteFile(target, content, 0o644); err != nil {
		return err
	}
	// Whole seconds, as Sigstore's metadata has them: a TUF client re-encodes `expires` from
	// what it parsed before checking the signature, and nanoseconds need not survive that.
	now := time.Now().UTC().Truncate(time.Second)
	year := now.AddDate(1, 0, 0)
	root := metadata.Root(year)
	root.Signed.ConsistentSnapshot = true
	signers := map[string]signature.Signer{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		_, public, signer := key()
		if err := root.Signed.AddKey(public, role); err != nil {
			return err
		}
		signers[role] = signer
	}
	if _, err := root.Sign(signers["root"]); err != nil {
		return err
	}
	if err := root.ToFile(filepath.Join(meta, "1.root.json"), true); err != nil {
		return err
	}
	if err := root.ToFile(filepath.Join(dir, "anchor.json"), true); err != nil {
		return err
	}
	if rotate {
		// Version 2 trusts a new root key: signed by both, as the TUF spec asks of a rotation.
		old := signers["root"]
		_, public, signer := key()
		oldIDs := append([]string{}, root.Signed.Roles["root"].KeyIDs...)
		for _, id := range oldIDs {
			if err := root.Signed.RevokeKey(id, "root"); err != nil {
				return err
			}
		}
		if err := root.Signed.AddKey(public, "root"); err != nil {
			return err
		}
		// The timestamp key changes too, so that only a client that followed the rotation
		// accepts the timestamp signed with the new one.
		for _, id := range append([]string{}, root.Signed.Roles["timestamp"].KeyIDs...) {
			if err := root.Signed.RevokeKey(id, "timestamp"); err != nil {
				return err
			}
		}
		_, timestampKey, timestampSigner := key()
		if err := root.Signed.AddKey(timestampKey, "timestamp"); err != nil {
			return err
		}
		signers["timestamp"] = timestampSigner
		root.Signed.Version = 2
		root.ClearSignatures()
		for _, s := range []signature.Signer{old, signer} {
			if _, err := root.Sign(s); err != nil {
				return err
			}
		}
		if err := root.ToFile(filepath.Join(meta, "2.root.json"), true); err != nil {
			return err
		}
	}
	targets := metadata.Targets(year)
	file, err := metadata.TargetFile().FromBytes("trusted_root.json", content, "sha256")
	if err != nil {
		return err
	}
	targets.Signed.Targets["trusted_root.json"] = file
	if _, err := targets.Sign(signers["targets"]); err != nil {
		return err
	}
	targetsBytes, err := written(targets.ToBytes(true))(filepath.Join(meta, "1.targets.json"))
	if err != nil {
		return err
	}
	snapshot := metadata.Snapshot(year)
	snapshot.Signed.Meta["targets.json"] = described(targetsBytes)
	if _, err := snapshot.Sign(signers["snapshot"]); err != nil {
		return err
	}
	snapshotBytes, err := written(snapshot.ToBytes(true))(filepath.Join(meta, "1.snapshot.json"))
	if err != nil {
		return err
	}
	expires := now.AddDate(0, 0, 1)
	if expiredTimestamp {
		expires = now.Add(-time.Hour)
	}
	timestamp := metadata.Timestamp(expires)
	timestamp.Signed.Meta["snapshot.json"] = described(snapshotBytes)
	if _, err := timestamp.Sign(signers["timestamp"]); err != nil {
		return err
	}
	return timestamp.ToFile(filepath.Join(meta, "timestamp.json"), true)
}

// written writes what ToBytes made to a file, and gives the bytes back.
func written(data []byte, err error) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return data, os.WriteFile(path, data, 0o644)
	}
}

// described is the version-1 meta entry of a role file, with its length and SHA-256, as
// Sigstore's repository writes them (tough requires both in timestamp.json).
func described(data []byte) *metadata.MetaFiles {
	sum := sha256.Sum256(data)
	file := metadata.MetaFile(1)
	file.Length = int64(len(data))
	file.Hashes = metadata.Hashes{"sha256": sum[:]}
	return file
}
