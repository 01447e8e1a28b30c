#!/usr/bin/env bash
# `make bench-admission`: what the door (config/admission, docs/admission.md) costs a request.
# On the real API server (hack/with-apiserver.sh), a namespace enforced with a VerifiedDigests
# of 2,048 digests (the most one holds) and one unlabelled; the same Deployment of 5 containers,
# each pinned by a listed digest, is created with dryRun=All in each, alternately, over one
# kept-alive connection: the admission chain runs in full and nothing is stored. Prints the
# median and 95th percentile of each, and of a denied one (a digest not listed).
# usage: hack/bench-admission.sh [REQUESTS]   (default 400 of each)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
requests=${1:-400}
[ -n "${KUBECONFIG:-}" ] || exec "$root/hack/with-apiserver.sh" "$0" "$@"
work=$(mktemp -d)
trap 'kubectl delete namespace door-on door-off --wait=false >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

kubectl apply --server-side -k "$root/config/admission" > /dev/null
kubectl wait --for=condition=Established --timeout=60s crd/verifieddigests.admission.image-reflector.io > /dev/null
kubectl create namespace door-on > /dev/null
kubectl label namespace door-on image-reflector.io/admission=enforce > /dev/null
kubectl create namespace door-off > /dev/null
python3 - "$work" <<'PY'
import hashlib, json, sys
work = sys.argv[1]
digests = {"sha256:" + hashlib.sha256(str(i).encode()).hexdigest(): f"ImagePolicy app{i}: 1.0.{i} elected"
           for i in range(2048)}
verified = {"apiVersion": "admission.image-reflector.io/v1alpha1", "kind": "VerifiedDigests",
            "metadata": {"name": "verified", "namespace": "door-on"},
            "spec": {"digests": digests, "count": len(digests)}}
json.dump(verified, open(f"{work}/verified.json", "w"))
listed = sorted(digests)
def deployment(namespace, digest_of):
    containers = [{"name": f"c{i}", "image": f"registry.example/team/app{i}:1.0.{i}@{digest_of(i)}"}
                  for i in range(5)]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"generateName": "bench-", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": "bench"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": containers}}}}
# The last listed digests: a list would be searched to its end, a map is not.
json.dump(deployment("door-on", lambda i: listed[-1 - i]), open(f"{work}/on.json", "w"))
json.dump(deployment("door-off", lambda i: listed[-1 - i]), open(f"{work}/off.json", "w"))
unlisted = "sha256:" + "0" * 64
json.dump(deployment("door-on", lambda i: listed[-1 - i] if i else unlisted), open(f"{work}/denied.json", "w"))
PY
kubectl apply --server-side -f "$work/verified.json" > /dev/null
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}' > "$work/server"
kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}' > "$work/token"
kubectl config view --raw --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$work/ca.pem"

python3 - "$work" "$requests" <<'PY'
import http.client, json, ssl, statistics, sys, time, urllib.parse
work, requests = sys.argv[1], int(sys.argv[2])
server = urllib.parse.urlparse(open(f"{work}/server").read())
context = ssl.create_default_context(cafile=f"{work}/ca.pem")
connection = http.client.HTTPSConnection(server.hostname, server.port, context=context)
headers = {"Authorization": "Bearer " + open(f"{work}/token").read(), "Content-Type": "application/json"}
bodies = {name: open(f"{work}/{name}.json").read() for name in ("on", "off", "denied")}
expected = {"on": 201, "off": 201, "denied": 403}
times = {name: [] for name in bodies}
for round in range(requests + 20):
    for name, body in bodies.items():
        namespace = json.loads(body)["metadata"]["namespace"]
        started = time.perf_counter()
        connection.request("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments?dryRun=All", body, headers)
        response = connection.getresponse()
        answer = response.read()
        took = time.perf_counter() - started
        if response.status != expected[name]:
            sys.exit(f"{name}: {response.status} where {expected[name]} was expected: {answer[:300]!r}")
        if round >= 20:  # the first rounds warm the connection and the policy's compiled program
            times[name].append(took * 1000)
print(f"bench-admission: {requests} dry-run creates each of a Deployment of 5 containers; 2,048 verified digests")
for name, label in (("off", "unlabelled (the door not evaluated)"), ("on", "enforced, admitted"), ("denied", "enforced, denied")):
    t = sorted(times[name])
    print(f"  {label:38} median {statistics.median(t):6.2f} ms   p95 {t[int(len(t) * 0.95)]:6.2f} ms")
PY
