// Command tufrepo is test infrastructure: it makes a TUF repository with go-tuf's metadata API
// (the Update Framework's reference implementation in Go) that serves one target,
// trusted_root.json, as Sigstore's TUF repository does, and serves a repository's directory on
// loopback. The controller's TUF client (src/registry/sigstore_root/) is tested against it.
//
//	tufrepo make DIR TRUSTED_ROOT [FLAG...]
//	    writes the metadata into DIR as Sigstore's repository lays it out (1.root.json, and
//	    2.root.json signed by the old and the new root key when rotate; N.targets.json,
//	    N.snapshot.json, timestamp.json, consistent snapshots) and the target under
//	    DIR/targets/<sha256>.trusted_root.json; DIR/anchor.json is the first root, the client's
//	    trust anchor. The keys are DIR/keys.json's when it exists (a later make of the same DIR
//	    is the same repository, as for a rollback or a freeze), else new ones kept there.
//	    Flags, each a state a TUF client must refuse unless said otherwise:
//	      rotate              a root rotation (accepted)
//	      expired-timestamp   the timestamp role expired an hour ago (also: a freeze, made
//	                          again over a repository a client has read)
//	      expired-snapshot    the snapshot role expired an hour ago
//	      expired-targets     the targets role expired an hour ago
//	      expires-in=DUR      the timestamp role expires DUR from now (accepted until then)
//	      version=N           targets, snapshot and timestamp at version N (default 1; made
//	                          again lower over a repository a client has read: a rollback)
//	      wrong-key           the timestamp signed by a key the root does not list
//	      threshold           the root asks two signatures of the targets role; it has one
//	      hash-mismatch       the target's bytes differ from what targets.json says
//	tufrepo serve DIR
//	    serves DIR on 127.0.0.1 at a free port and prints the address.
package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
			fail(fmt.Errorf("tufrepo make DIR TRUSTED_ROOT [FLAG...]"))
		}
		opts, err := parseOptions(os.Args[4:])
		fail(err)
		fail(makeRepository(os.Args[2], os.Args[3], opts))
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

// options are the states a repository is made in.
type options struct {
	rotate, expiredTimestamp, expiredSnapshot, expiredTargets bool
	wrongKey, threshold, hashMismatch                         bool
	expiresIn                                                 time.Duration
	version                                                   int64
}

func parseOptions(flags []string) (options, error) {
	opts := options{version: 1}
	for _, f := range flags {
		name, value, _ := strings.Cut(f, "=")
		var err error
		switch name {
		case "rotate":
			opts.rotate = true
		case "expired-timestamp":
			opts.expiredTimestamp = true
		case "expired-snapshot":
			opts.expiredSnapshot = true
		case "expired-targets":
			opts.expiredTargets = true
		case "wrong-key":
			opts.wrongKey = true
		case "threshold":
			opts.threshold = true
		case "hash-mismatch":
			opts.hashMismatch = true
		case "expires-in":
			opts.expiresIn, err = time.ParseDuration(value)
		case "version":
			opts.version, err = strconv.ParseInt(value, 10, 64)
		default:
			err = fmt.Errorf("unknown flag %q", f)
		}
		if err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// keys are the repository's ed25519 seeds by role, kept in DIR/keys.json.
type keys map[string][]byte

func loadKeys(dir string) (keys, error) {
	k := keys{}
	data, err := os.ReadFile(filepath.Join(dir, "keys.json"))
	if os.IsNotExist(err) {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	return k, json.Unmarshal(data, &k)
}

func (k keys) save(dir string) error {
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "keys.json"), data, 0o600)
}

// key is the role's key from k, made when it has none.
func (k keys) key(role string) (*metadata.Key, signature.Signer) {
	seed, ok := k[role]
	if !ok {
		_, private, err := ed25519.GenerateKey(nil)
		fail(err)
		seed = private.Seed()
		k[role] = seed
	}
	private := ed25519.NewKeyFromSeed(seed)
	public, err := metadata.KeyFromPublicKey(private.Public())
	fail(err)
	signer, err := signature.LoadSigner(private, crypto.Hash(0))
	fail(err)
	return public, signer
}

func makeRepository(dir, trustedRoot string, opts options) error {
	meta := dir
	targetsDir := filepath.Join(dir, "targets")
	for _, d := range []string{meta, targetsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	k, err := loadKeys(dir)
	if err != nil {
		return err
	}
	content, err := os.ReadFile(trustedRoot)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(content)
	target := filepath.Join(targetsDir, hex.EncodeToString(sum[:])+".trusted_root.json")
	// Whole seconds, as Sigstore's metadata has them: a TUF client re-encodes `expires` from
	// what it parsed before checking the signature, and nanoseconds need not survive that.
	now := time.Now().UTC().Truncate(time.Second)
	year := now.AddDate(1, 0, 0)
	expired := now.Add(-time.Hour)
	root := metadata.Root(year)
	root.Signed.ConsistentSnapshot = true
	signers := map[string]signature.Signer{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		public, signer := k.key(role)
		if err := root.Signed.AddKey(public, role); err != nil {
			return err
		}
		signers[role] = signer
	}
	if opts.threshold {
		root.Signed.Roles["targets"].Threshold = 2
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
	if opts.rotate {
		if err := rotateRoot(root, k, signers, meta); err != nil {
			return err
		}
	}
	if opts.wrongKey {
		// Signed by a key the root does not list.
		_, private, err := ed25519.GenerateKey(nil)
		fail(err)
		signers["timestamp"], err = signature.LoadSigner(private, crypto.Hash(0))
		fail(err)
	}
	if err := k.save(dir); err != nil {
		return err
	}
	expiry := func(isExpired bool) time.Time {
		if isExpired {
			return expired
		}
		return year
	}
	targets := metadata.Targets(expiry(opts.expiredTargets))
	targets.Signed.Version = opts.version
	file, err := metadata.TargetFile().FromBytes("trusted_root.json", content, "sha256")
	if err != nil {
		return err
	}
	targets.Signed.Targets["trusted_root.json"] = file
	if _, err := targets.Sign(signers["targets"]); err != nil {
		return err
	}
	name := func(role string) string { return fmt.Sprintf("%d.%s.json", opts.version, role) }
	targetsBytes, err := written(targets.ToBytes(true))(filepath.Join(meta, name("targets")))
	if err != nil {
		return err
	}
	snapshot := metadata.Snapshot(expiry(opts.expiredSnapshot))
	snapshot.Signed.Version = opts.version
	snapshot.Signed.Meta["targets.json"] = described(targetsBytes, opts.version)
	if _, err := snapshot.Sign(signers["snapshot"]); err != nil {
		return err
	}
	snapshotBytes, err := written(snapshot.ToBytes(true))(filepath.Join(meta, name("snapshot")))
	if err != nil {
		return err
	}
	expires := now.AddDate(0, 0, 1)
	switch {
	case opts.expiredTimestamp:
		expires = expired
	case opts.expiresIn > 0:
		expires = now.Add(opts.expiresIn)
	}
	timestamp := metadata.Timestamp(expires)
	timestamp.Signed.Version = opts.version
	timestamp.Signed.Meta["snapshot.json"] = described(snapshotBytes, opts.version)
	if _, err := timestamp.Sign(signers["timestamp"]); err != nil {
		return err
	}
	if err := timestamp.ToFile(filepath.Join(meta, "timestamp.json"), true); err != nil {
		return err
	}
	if opts.hashMismatch {
		// The same length, another byte: a hash that does not match.
		content = append([]byte{}, content...)
		content[0] ^= 0x20
	}
	return os.WriteFile(target, content, 0o644)
}

// rotateRoot writes 2.root.json, which trusts a new root key and a new timestamp key, signed
// by both root keys, as the TUF spec asks of a rotation; only a client that followed it
// accepts the timestamp signed with the new key.
func rotateRoot(root *metadata.Metadata[metadata.RootType], k keys, signers map[string]signature.Signer, meta string) error {
	old := signers["root"]
	public, signer := k.key("root-2")
	for _, id := range append([]string{}, root.Signed.Roles["root"].KeyIDs...) {
		if err := root.Signed.RevokeKey(id, "root"); err != nil {
			return err
		}
	}
	if err := root.Signed.AddKey(public, "root"); err != nil {
		return err
	}
	for _, id := range append([]string{}, root.Signed.Roles["timestamp"].KeyIDs...) {
		if err := root.Signed.RevokeKey(id, "timestamp"); err != nil {
			return err
		}
	}
	timestampKey, timestampSigner := k.key("timestamp-2")
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
	return root.ToFile(filepath.Join(meta, "2.root.json"), true)
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

// described is the meta entry of a role file at version, with its length and SHA-256, as
// Sigstore's repository writes them (tough requires both in timestamp.json).
func described(data []byte, version int64) *metadata.MetaFiles {
	sum := sha256.Sum256(data)
	file := metadata.MetaFile(version)
	file.Length = int64(len(data))
	file.Hashes = metadata.Hashes{"sha256": sum[:]}
	return file
}
