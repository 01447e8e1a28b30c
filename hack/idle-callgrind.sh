#!/bin/sh
# What an idle controller runs, for `make symbol-order`: BINARY `run` with no objects under
# callgrind, its counts zeroed once it is ready (its start-up pages are given back by then)
# for IDLE seconds, then SIGTERM. Needs KUBECONFIG (hack/with-apiserver.sh) and the CRDs.
# usage: hack/idle-callgrind.sh BINARY OUT_FILE [IDLE]
set -eu
bin=$1 out=$2 idle=${3:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
kubectl apply -f "$here/crds/crds.yaml" >/dev/null
store=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RUNTIME_NAMESPACE=default valgrind --tool=callgrind --quiet \
  --callgrind-out-file="$out" --dump-instr=yes --dump-line=no --compress-pos=no \
  --compress-strings=no "$bin" run --watch-all-namespaces=false --health-addr="127.0.0.1:$port" \
  --metrics-addr=127.0.0.1:0 --log-level=error --storage-path="$store/store" &
pid=$!
i=0
until curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
  kill -0 $pid 2>/dev/null || { wait $pid || true; echo "idle-callgrind: $bin exited before it was ready" >&2; exit 1; }
  i=$((i + 1)); [ $i -lt 1200 ] || { echo "idle-callgrind: not ready in 120 s" >&2; kill $pid; exit 1; }
  sleep 0.1
done
callgrind_control --zero $pid >/dev/null
sleep "$idle"
kill -TERM $pid
wait $pid
rm -rf "$store"
