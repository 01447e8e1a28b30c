#!/bin/sh
# Pushes IMAGE to a local Distribution registry and runs it from there as the Deployment in
# config/default runs it: the Deployment's own arguments, a read-only root filesystem, uid and
# gid 65532 with fsGroup 1337 as a supplementary group, every capability dropped, no new
# privileges, /data and /tmp as kubelet makes emptyDirs with fsGroup (root-owned, group 1337,
# mode 2777), and the ServiceAccount's credentials where a Pod has them
# (/var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST/PORT; a token of the
# installed ServiceAccount, so the installed RBAC is what it gets). It must answer /readyz and
# /healthz, take the leader Lease, give its executable's start-up pages back, keep the volume's
# mode, and stop cleanly on SIGTERM.
# Runs with podman and runc, or, where no container can start, unpacked with umoci under chroot
# in a private mount namespace. Needs the API server of KUBECONFIG (`make image-smoke` starts one).
# usage: hack/image-smoke.sh IMAGE
set -eu
image=$1
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/local-registry.sh"
ref="127.0.0.1:$port/image-reflector:smoke"
skopeo copy --quiet --dest-tls-verify=false "containers-storage:$image" "docker://$ref"
echo "pushed $ref"

config=$(skopeo inspect --config --tls-verify=false "docker://$ref")
echo "$config" | grep -q '"User": "65532:65532"' || { echo "image user is not 65532:65532: $config" >&2; exit 1; }
echo "$config" | grep -q '"/usr/local/bin/image-reflector"' || { echo "entrypoint is not the binary: $config" >&2; exit 1; }

# --- what a Pod of config/default gets
namespace=image-reflector-system
kubectl apply -k "$root/config/default" >/dev/null
deployment=$(kubectl kustomize "$root/config/default" | awk '/^kind: Deployment$/{d=1} d' )
# The container's args, one a line, as the Deployment lists them.
args=$(echo "$deployment" | awk '/^ *(- )?args:$/{a=1; next} a && /^ *- /{sub(/^ *- /, ""); print; next} a{exit}')
[ -n "$args" ] || { echo "no args found in config/default's Deployment" >&2; exit 1; }
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
hostport=${server#https://}; hostport=${hostport%%/*}
sa="$work/serviceaccount"
mkdir -p "$sa" "$work/pod-data" "$work/pod-tmp"
kubectl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$sa/ca.crt"
kubectl create token image-reflector-controller -n "$namespace" --duration=10m > "$sa/token"
printf '%s' "$namespace" > "$sa/namespace"
chmod 0755 "$work" "$sa"; chmod 0644 "$sa"/*
for d in pod-data pod-tmp; do chown 0:1337 "$work/$d"; chmod 2777 "$work/$d"; done
# A Lease left by an earlier run would make this one wait as a stand-by.
kubectl delete lease -n "$namespace" image-reflector-controller-leader-election --ignore-not-found >/dev/null
set -- $args

wait_ready() { # ALIVE_COMMAND: fails at once when the process is gone
  i=0
  until curl -sf -o /dev/null http://127.0.0.1:9440/readyz; do
    $1 || { echo "image-smoke: the controller exited before /readyz answered" >&2; return 1; }
    i=$((i + 1)); [ $i -lt 600 ] || { echo "image-smoke: /readyz did not answer within 60 s" >&2; return 1; }
    sleep 0.1
  done
  curl -sf -o /dev/null http://127.0.0.1:9440/healthz || { echo "image-smoke: /healthz fails" >&2; return 1; }
  i=0
  until kubectl get lease -n "$namespace" image-reflector-controller-leader-election \
      -o jsonpath='{.spec.holderIdentity}' 2>/dev/null | grep -q .; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "image-smoke: the Lease was not taken" >&2; return 1; }
    sleep 0.1
  done
}
check_volume() {
  [ "$(stat -c '%a %u %g' "$work/pod-data")" = "2777 0 1337" ] || { echo "image-smoke: /data's mode or owner changed: $(stat -c '%a %u %g' "$work/pod-data")" >&2; exit 1; }
  [ "$(stat -c '%a %u' "$work/pod-data/.storage-version")" = "600 65532" ] || { echo "image-smoke: the store did not start in /data" >&2; exit 1; }
}
check_log() {
  grep -q '"source":"in-cluster"' "$1" || { echo "image-smoke: not connected with in-cluster configuration:" >&2; cat "$1" >&2; exit 1; }
  # RBAC's refusals name the user ("is forbidden: User ... cannot ..."); a namespace being
  # deleted refuses new Events with "forbidden" too, which is not the install's doing.
  ! grep -q 'is forbidden: User' "$1" || { echo "image-smoke: forbidden by the installed RBAC:" >&2; cat "$1" >&2; exit 1; }
}

podman_run() {
  podman --runtime runc run --read-only --network host \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --tls-verify=false "$@"
}
# IMAGE_SMOKE_RUNTIME=chroot takes the fallback even where podman works (to test it).
if [ "${IMAGE_SMOKE_RUNTIME:-podman}" = podman ] && out=$(podman_run --rm "$ref" run --help 2> "$work/podman.err"); then
  echo "$out" | grep -q -- '--metrics-addr' || { echo "unexpected output of run --help: $out" >&2; exit 1; }
  podman_run -d --name image-reflector-smoke \
    --user 65532:65532 --group-add 1337 --cap-drop all --security-opt no-new-privileges \
    -v "$work/pod-data:/data" -v "$work/pod-tmp:/tmp" -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
    -e KUBERNETES_SERVICE_HOST="${hostport%:*}" -e KUBERNETES_SERVICE_PORT="${hostport##*:}" \
    -e RUNTIME_NAMESPACE="$namespace" \
    "$ref" "$@" >/dev/null
  stop() { podman stop -t 10 image-reflector-smoke >/dev/null 2>&1 || true; podman rm -f image-reflector-smoke >/dev/null 2>&1 || true; }
  running() { [ "$(podman inspect -f '{{.State.Running}}' image-reflector-smoke 2>/dev/null)" = true ]; }
  if ! wait_ready running; then podman logs image-reflector-smoke >&2 || true; stop; exit 1; fi
  podman stop -t 10 image-reflector-smoke >/dev/null
  code=$(podman inspect image-reflector-smoke --format '{{.State.ExitCode}}')
  podman logs image-reflector-smoke > "$work/run.log" 2>&1
  podman rm image-reflector-smoke >/dev/null
  [ "$code" = 0 ] || { echo "image-smoke: exit code $code after SIGTERM" >&2; cat "$work/run.log" >&2; exit 1; }
  check_log "$work/run.log"
  check_volume
  echo "image-smoke: ok (podman + runc: the Deployment's arguments, read-only root, 65532 + fsGroup 1337, no capabilities, fsGroup emptyDirs, in-cluster credentials; /readyz, the Lease, SIGTERM)"
  exit 0
fi
echo "image-smoke: podman could not run the image here ($(tail -n 1 "$work/podman.err" 2>/dev/null)); unpacking it with umoci and running it under chroot" >&2
skopeo copy --quiet --src-tls-verify=false "docker://$ref" "oci:$work/layout:smoke"
umoci unpack --image "$work/layout:smoke" "$work/bundle" >/dev/null
rootfs="$work/bundle/rootfs"
mkdir -p "$rootfs/var/run/secrets/kubernetes.io/serviceaccount"
# A private mount namespace: the volumes bound in, the root made read-only, then the Pod's
# user (chroot sets it after entering; no new privileges, no capabilities left).
HOST="${hostport%:*}" PORT="${hostport##*:}" NS="$namespace" \
  unshare --mount --propagation private sh -c '
  set -e
  rootfs=$1 work=$2; shift 2
  mkdir -p "$rootfs/proc"
  mount --bind "$rootfs" "$rootfs"; mount -o remount,bind,ro "$rootfs"
  # /proc, as every container runtime mounts it (the controller reads its own smaps there).
  mount -t proc proc "$rootfs/proc"
  mount --bind "$work/pod-data" "$rootfs/data"; mount --bind "$work/pod-tmp" "$rootfs/tmp"
  mount --bind "$work/serviceaccount" "$rootfs/var/run/secrets/kubernetes.io/serviceaccount"
  exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin KUBERNETES_SERVICE_HOST="$HOST" KUBERNETES_SERVICE_PORT="$PORT" RUNTIME_NAMESPACE="$NS" \
    setpriv --no-new-privs -- chroot --userspec=65532:65532 --groups=1337 "$rootfs" \
    /usr/local/bin/image-reflector "$@"
' sh "$rootfs" "$work" "$@" > "$work/run.log" 2>&1 &
pid=$!
running() { kill -0 "$pid" 2>/dev/null; }
if ! wait_ready running; then cat "$work/run.log" >&2; kill "$pid" 2>/dev/null; exit 1; fi
kill -TERM "$pid"
wait "$pid" || { echo "image-smoke: exit code $? after SIGTERM" >&2; cat "$work/run.log" >&2; exit 1; }
check_log "$work/run.log"
check_volume
echo "image-smoke: ok (umoci + chroot as 65532 + fsGroup 1337, read-only root, no capabilities; /readyz, the Lease, SIGTERM)"
