# The door on the real node (docs/admission.md), sourced by hack/e2e-cluster.sh once the
# controller runs from config/default and the real cosign is set up (its functions and $work):
# config/admission applied after the controller, as a user adds it; a namespace rolled out in
# warn mode, then enforced; a Deployment of the elected digest becomes Available, pulled by the
# kubelet; one of a held-back digest is refused, and a ReplicaSet admitted in warn mode creates
# no Pod once enforced; with the controller stopped the door answers the same; a key revoked
# removes the digest; tenants holding `admin` or `edit` cannot write the kind (the real roles,
# aggregated by the controller-manager); then config/admission is removed.

# A second Distribution on 127.0.0.1 serving the same storage: containerd pulls over plain HTTP
# only from loopback, and the door compares digests, not registries.
pull_registry=$(serve_registry pull "" 127.0.0.1 "$work/open/data")
# A program that waits until it is told to stop, as a one-layer image: what the kubelet runs.
printf '#include <signal.h>\n#include <unistd.h>\nstatic void bye(int s) { (void)s; _exit(0); }\nint main(void) { signal(SIGTERM, bye); for (;;) pause(); }\n' > "$work/sleeper.c"
gcc -static -O2 -o "$work/sleeper" "$work/sleeper.c"
push_sleeper() { # REF: the program, labelled with REF so that each tag has its own digest
  ctr=$(buildah from scratch)
  buildah copy --quiet "$ctr" "$work/sleeper" /sleeper >/dev/null
  buildah config --entrypoint '["/sleeper"]' --label "e2e.ref=$1" "$ctr"
  buildah commit --quiet --rm "$ctr" localhost/e2e-sleeper:latest >/dev/null
  skopeo copy --quiet --dest-tls-verify=false containers-storage:localhost/e2e-sleeper:latest "docker://$1"
  skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$1"
}
door_good=$(push_sleeper "$open_registry/door/app:1.0.0")
door_held=$(push_sleeper "$open_registry/door/app:1.1.0")
cosign sign --key release.key --signing-config signing-config.json --yes "$open_registry/door/app@$door_good" >/dev/null 2>&1

kubectl apply -k "$root/config/admission" > /dev/null
kubectl wait --for=condition=Established --timeout=60s crd/verifieddigests.admission.image-reflector.io > /dev/null
kubectl create namespace door > /dev/null
kubectl label namespace door image-reflector.io/admission=warn > /dev/null
kubectl create secret generic cosign-keys -n door --from-file=cosign.pub="$work/cosign.pub" > /dev/null
kubectl apply -f - > /dev/null <<YAML
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: door}
spec: {image: "$open_registry/door/app", interval: 1m, insecure: true}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: door}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1.0.0"}}
  digestReflectionPolicy: IfNotPresent
  verify: {provider: cosign, secretRef: {name: cosign-keys}}
YAML
eventually "door: the gated policy elects the signed 1.0.0 and holds back 1.1.0" 90 \
  equals imagepolicy/app door '{.status.latestRef.tag}@{.status.latestRef.digest}/{.status.heldBack[*].tag}' "1.0.0@$door_good/1.1.0"
eventually "door: config/admission applied after the controller; its VerifiedDigests lists the elected digest only" 90 \
  equals verifieddigests/verified door '{.spec.count}/{.spec.digests}' "1/{\"$door_good\":\"ImagePolicy app: 1.0.0 elected\"}"

deployment() { # NAME DIGEST: a Deployment of the program, pulled from loopback by its digest
  printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: door}\nspec:\n  selector: {matchLabels: {app: %s}}\n  template:\n    metadata: {labels: {app: %s}}\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers: [{name: app, image: "%s", imagePullPolicy: IfNotPresent}]\n' \
    "$1" "$1" "$1" "$pull_registry/door/app@$2"
}
denial="images not verified by image-reflector: $pull_registry/door/app@$door_held (its digest was not elected by a gated ImagePolicy of this namespace)"
deployment held "$door_held" > "$work/held.yaml"
kubectl apply -f "$work/held.yaml" > "$work/held-warn.log" 2>&1 || true
check "door, warn mode: a Deployment of the held-back digest is admitted with a warning naming it" \
  sh -c "grep -q '^Warning: .*image-reflector-verified-images' '$work/held-warn.log' && grep -q '^deployment.apps/held created' '$work/held-warn.log'"
check "door, warn mode: the warning says which image and why" grep -qF "$denial" "$work/held-warn.log"
eventually "door, warn mode: its Pod runs (the kubelet pulled it)" 120 \
  kubectl wait -n door --for=condition=Available deploy/held --timeout=1s

kubectl label --overwrite namespace door image-reflector.io/admission=enforce > /dev/null
deployment verified "$door_good" | kubectl apply -f - > /dev/null
eventually "door, enforced: a Deployment of the elected digest becomes Available, pulled by the kubelet" 120 \
  kubectl wait -n door --for=condition=Available deploy/verified --timeout=1s
deployment refused "$door_held" > "$work/refused.yaml"
check "door, enforced: a Deployment of the held-back digest is refused, naming the image and why" \
  sh -c "! kubectl apply -f '$work/refused.yaml' > '$work/refused.log' 2>&1 && grep -qF '$denial' '$work/refused.log'"
kubectl delete pods -n door -l app=held --wait=true > /dev/null
eventually "door, enforced: the ReplicaSet admitted in warn mode creates no Pod (FailedCreate, the image named)" 60 \
  sh -c "kubectl get events -n door --field-selector reason=FailedCreate -o jsonpath='{.items[*].message}' | grep -qF '$denial'"
check "door, enforced: the held Deployment has no Pod" \
  sh -c "[ -z \"\$(kubectl get pods -n door -l app=held -o name)\" ]"

# The controller stopped: the API server answers from the object last written.
kubectl scale -n "$namespace" "deploy/$deployment" --replicas=0 > /dev/null
eventually "door: the controller is stopped (no Pod)" 90 \
  sh -c "[ -z \"\$(kubectl get pods -n '$namespace' -l app=image-reflector-controller -o name)\" ]"
kubectl delete pods -n door -l app=verified --wait=true > /dev/null
eventually "door, controller stopped: the verified Deployment's Pod is admitted again and becomes Ready" 120 \
  kubectl wait -n door --for=condition=Available deploy/verified --timeout=1s
check "door, controller stopped: the held-back digest is still refused" \
  sh -c "! kubectl apply -f '$work/refused.yaml' > /dev/null 2>&1"
kubectl scale -n "$namespace" "deploy/$deployment" --replicas=1 > /dev/null
check "door: the controller comes back" \
  kubectl rollout status -n "$namespace" "deploy/$deployment" --timeout=180s
door_pod=$(kubectl get pods -n "$namespace" -l app=image-reflector-controller -o jsonpath='{.items[0].metadata.name}')
kubectl logs -f -n "$namespace" "$door_pod" > "$work/pod-door.log" 2>&1 &
log_streams="$log_streams $!"

# A key revoked: the signature no longer verifies, the gate holds 1.0.0, its digest leaves.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl ec -pubout 2>/dev/null > "$work/other.pub"
kubectl create secret generic cosign-keys -n door --from-file=cosign.pub="$work/other.pub" \
  --dry-run=client -o yaml | kubectl apply -f - > /dev/null
eventually "door: with the key revoked, the digest leaves VerifiedDigests" 120 \
  equals verifieddigests/verified door '{.spec.count}' "0"
kubectl delete pods -n door -l app=verified --wait=true > /dev/null
eventually "door: the verified Deployment's next Pod is refused once its digest was revoked" 60 \
  sh -c "kubectl get events -n door --field-selector reason=FailedCreate -o jsonpath='{.items[*].message}' | grep -qF 'door/app@$door_good (its digest was not elected'"

# Tenants: the real `admin` and `edit` roles, as the controller-manager aggregates them.
kubectl create serviceaccount tenant -n door > /dev/null
kubectl create rolebinding tenant-admin -n door --clusterrole=admin --serviceaccount=door:tenant > /dev/null
can() { kubectl auth can-i "$1" "$2" -n door --as=system:serviceaccount:door:tenant 2>/dev/null || true; }
check "door: a tenant with admin in the namespace may create Deployments (the roles are aggregated)" \
  test "$(can create deployments.apps)" = yes
for verb in create update patch delete; do
  check "door: a tenant with admin (and so edit) in the namespace may not $verb VerifiedDigests" \
    test "$(can "$verb" verifieddigests.admission.image-reflector.io)" = no
done

kubectl delete namespace door --wait --timeout=120s > /dev/null
check "door: config/admission is removed with kubectl delete -k" \
  kubectl delete -k "$root/config/admission" --wait --timeout=60s
