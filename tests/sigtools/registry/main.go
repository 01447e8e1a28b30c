// Command referrers-registry serves an in-memory OCI registry with the referrers API
// (GET /v2/<name>/referrers/<digest>, with the artifactType filter) on loopback, for the
// signature tests. It prints the address it listens on, then serves until killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	referrers := flag.Bool("referrers", true, "serve the referrers API (false: clients fall back to the tag schema)")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen on %s: %v", *addr, err)
	}
	// The address first, alone on its line: the tests read it to know where to push.
	fmt.Println(ln.Addr().String())
	quiet := log.New(os.Stderr, "referrers-registry: ", log.LstdFlags)
	handler := registry.New(registry.WithReferrersSupport(*referrers), registry.Logger(quiet))
	log.Fatal(http.Serve(ln, withLocation(handler)))
}

// withLocation adds the Location header the distribution spec requires on the 201 Created of
// a blob upload and of a manifest push (go-containerregistry's registry omits it; clients such
// as oci-client need it): where the digest it answered can be read.
func withLocation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&locating{ResponseWriter: w, base: baseOf(r.URL.Path)}, r)
	})
}

type locating struct {
	http.ResponseWriter
	base string
}

func (l *locating) WriteHeader(status int) {
	h := l.Header()
	if status == http.StatusCreated && h.Get("Location") == "" && l.base != "" {
		if d := h.Get("Docker-Content-Digest"); d != "" {
			h.Set("Location", l.base+d)
		}
	}
	l.ResponseWriter.WriteHeader(status)
}

// baseOf is where what a request creates is read: /v2/<name>/blobs/ for a blob upload,
// /v2/<name>/manifests/ for a manifest push, or "".
func baseOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return ""
	}
	if name, _, found := strings.Cut(rest, "/blobs/uploads"); found {
		return "/v2/" + name + "/blobs/"
	}
	if i := strings.LastIndex(rest, "/manifests/"); i > 0 {
		return "/v2/" + rest[:i] + "/manifests/"
	}
	return ""
}
