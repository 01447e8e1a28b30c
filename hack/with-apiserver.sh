#!/usr/bin/env bash
# Runs a command against a Kubernetes API server of its own, as envtest does: the kube-apiserver
# that make kube builds (hack/kube-build.sh, pinned in tests/kube/go.mod) and Debian's etcd, on
# 127.0.0.1 at free ports, with state in a temporary directory. The command gets KUBECONFIG (an
# admin token in system:masters; RBAC is on, so a ServiceAccount token has only what RBAC gives),
# and PATH with the built kubectl first. Both processes
# are stopped and the state removed when the command ends, whatever its exit status, and on
# SIGINT/SIGTERM. No nodes, no controllers: objects are stored and validated, Pods never run.
#
#   hack/with-apiserver.sh CMD [ARG...]     exits with CMD's status
#
# With KUBECONFIG set, that cluster is used instead and nothing is started (kubectl is still the
# built one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }
log() { echo "with-apiserver: $*" >&2; }

bin=$("$root/hack/kube-build.sh")
export PATH="$bin:$PATH"
if [ -n "${KUBECONFIG:-}" ]; then log "against KUBECONFIG=$KUBECONFIG"; exec "$@"; fi
need=""
command -v etcd >/dev/null || need+=" etcd-server"
command -v openssl >/dev/null || need+=" openssl"
if [ -n "$need" ]; then
  log "installing:$need"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  # Debian starts a package's service on install where it can: keep etcd's own from starting.
  prc=""; if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null; $sudo chmod 755 /usr/sbin/policy-rc.d; prc=1; fi
  rc=0
  { $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $need; } >&2 || rc=$?
  [ -z "$prc" ] || $sudo rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || { log "could not install$need (apt-get's message is above)"; exit 1; }
fi

state=$(mktemp -d "${TMPDIR:-/tmp}/image-reflector-apiserver.XXXXXX")
# etcd's data on tmpfs when there is one: no fsync cost, and nothing left on disk.
data=$state/etcd; [ -d /dev/shm ] && [ -w /dev/shm ] && data=$(mktemp -d /dev/shm/image-reflector-etcd.XXXXXX)
pids=""
stop() {
  # One at a time, the apiserver before its etcd: SIGTERM, up to 15 s for a graceful exit, then
  # SIGKILL. Nothing outlives the command.
  for pid in $pids; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  [ -z "${KEEP_APISERVER_STATE:-}" ] || { log "state kept in $state (etcd: $data)"; return; }
  rm -rf "$state" "$data"
}
trap 'rc=$?; stop; exit $rc' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A port nothing listens on now (the race with another process taking it is the apiserver's to lose:
# it then fails to start and says so below).
free_port() {
  local p
  while :; do
    p=$(( 20000 + RANDOM % 12000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

pki=$state/pki; mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=image-reflector-test-ca \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$pki/apiserver.key" \
  -out "$pki/apiserver.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$pki/san.ext"
openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -days 30 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
token=$(openssl rand -hex 16)
echo "$token,admin,admin,system:masters" > "$pki/tokens.csv"

etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
etcd --name e2e --data-dir "$data" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" --initial-cluster "e2e=http://127.0.0.1:$peer_port" \
  > "$state/etcd.log" 2>&1 &
pids+=" $!"
"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$pki" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
  > "$state/apiserver.log" 2>&1 &
pids="$! $pids"   # the apiserver stops before etcd

export KUBECONFIG=$state/kubeconfig
cat > "$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$pki/ca.crt"}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: e2e, context: {cluster: e2e, user: admin, namespace: default}}]
current-context: e2e
EOF

# Ready when /readyz says so and the default namespace exists (the apiserver's own bootstrap).
for _ in $(seq 1 600); do
  if kubectl get --raw /readyz >/dev/null 2>&1 && kubectl get namespace default >/dev/null 2>&1; then
    log "kube-apiserver $(cat "$bin/.version") ready at https://127.0.0.1:$api_port"
    rc=0; "$@" || rc=$?
    exit "$rc"
  fi
  for pid in $pids; do
    kill -0 "$pid" 2>/dev/null || { log "a process exited before the API server was ready:"; tail -n 15 "$state/etcd.log" "$state/apiserver.log" >&2; exit 1; }
  done
  sleep 0.1
done
log "the API server was not ready within 60 s:"; tail -n 15 "$state/etcd.log" "$state/apiserver.log" >&2
exit 1
