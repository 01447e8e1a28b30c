# Sourced by hack/demo.sh and hack/image-smoke.sh: a throw-away Distribution registry on
# 127.0.0.1 with a free port and storage under $work, stopped with the script.
# Sets: work (a temporary directory), port, registry (http://127.0.0.1:$port).
work=$(mktemp -d)
registry_pid=""
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/registry.yml" <<YAML
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $work/data}}
http: {addr: 127.0.0.1:$port, secret: local-only}
YAML
docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 &
registry_pid=$!
registry="http://127.0.0.1:$port"
# The registry answers /v2/ within a fraction of a second; give up after ten.
i=0
until curl -sf -o /dev/null "$registry/v2/"; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/registry.log" >&2; exit 1; }
  sleep 0.1
done
