#!/usr/bin/env bash
# Measures the sigstore crate sigstore-verify against sigstore-go on the cosign cases of the
# signature corpus (docs/development.md, "The Sigstore verifier is our own"): dumps the corpus
# (ORACLE_DUMP), judges it with sigstore-go (make sigtools' signature-judge) and with
# sigstore-verify mapped the same way (src/main.rs), and prints where they differ. Needs make
# sigtools; builds into target/ here (about 260 CPU-seconds cold, aws-lc-sys included).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${SIGTOOLS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/image-reflector-sigtools/bin}
target=${CARGO_TARGET_DIR:-$here/target}
(cd "$here" && cargo build --release --locked --quiet)
(cd "$root" && env -u CARGO_TARGET_DIR ORACLE_DUMP="$work/corpus.jsonl" cargo test --locked --quiet --test it -- --ignored signatures::oracle >/dev/null)
"$bin/signature-judge" <"$work/corpus.jsonl" >"$work/go.jsonl"
"$target/release/sigstore-verify-eval" <"$work/corpus.jsonl" >"$work/rust.jsonl"
python3 - "$work/go.jsonl" "$work/rust.jsonl" <<'PY'
import json, sys
go = {v["id"]: v for v in map(json.loads, open(sys.argv[1]))}
rust = [json.loads(l) for l in open(sys.argv[2])]
differ = [r for r in rust if r["valid"] != go[r["id"]]["valid"]]
print(f"{len(rust)} cosign cases: {len(rust) - len(differ)} agree with sigstore-go, {len(differ)} differ")
for r in differ:
    verdict = "elects" if r["valid"] else "refuses"
    print(f"  {r['id']}: sigstore-verify {verdict} ({r.get('reason', '')[:100]}); sigstore-go: {go[r['id']].get('reason', '')[:80] or 'valid'}")
PY
