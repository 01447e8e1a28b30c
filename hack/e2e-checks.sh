# The checks hack/e2e-cluster.sh and hack/e2e-release.sh count, sourced by both (POSIX sh):
# each prints "ok: DESC" or "FAILED: DESC" and adds to $passed or $failed.
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1" >&2; }
check() { desc=$1; shift; if "$@"; then pass "$desc"; else fail "$desc"; fi; }
# Polls CMD (every 0.5 s, up to SECONDS) until it succeeds: a condition, not a sleep.
eventually() {
  desc=$1; limit=$2; shift 2
  deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { fail "$desc (not within ${limit}s)"; return 1; }
    sleep 0.5
  done
  pass "$desc"
}
jsonpath() { kubectl get "$1" -n "$2" -o "jsonpath=$3" 2>/dev/null; }
equals() { [ "$(jsonpath "$1" "$2" "$3")" = "$4" ]; }
