# image-reflector: build, test and run targets. `make test` is what CI runs (via .ci/run).
CARGO ?= cargo
SHARED ?= ../shared
# Where `make kube` puts the Kubernetes binaries (outside the work tree; the default of the
# team's test tools too, which find them through this variable).
KUBE_BIN_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/image-reflector-kube/bin
export KUBE_BIN_DIR
# Where `make flux` puts the Flux components the Flux end-to-end tests run (outside the work tree).
FLUX_BIN_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/image-reflector-flux/bin
export FLUX_BIN_DIR

.PHONY: release release-push release-deps release-check e2e-release all build test lint fmt crds run kube flux sigtools e2e e2e-flux e2e-signatures e2e-cluster prometheus-deps bench bench-admission bench-controller conformance mutants deps image image-deps image-smoke deploy undeploy fuzz

all: build

build:
	$(CARGO) build --release

# Installs what the tests need when it is missing, then runs the whole suite and ends on one
# count over every test binary (cargo's last line is the doc-tests' own).
test: deps
	@mkdir -p target
	@bash -o pipefail -c '$(CARGO) test --locked 2>&1 | tee target/test.log'; status=$$?; \
	awk '/^test result:/ { p += $$4; f += $$6; i += $$8 } \
	     END { print "make test, every binary together (skipped: the end-to-end tests, which make e2e* run):"; \
	           printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' target/test.log; \
	exit $$status

# Debian packages the integration tests use: a real registry (CNCF Distribution) and htpasswd
# for its Basic-auth variant. Installed with apt-get when missing (sudo when not root).
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust from rustup.rs" >&2; exit 1; }
	@missing=""; \
	[ -x /usr/bin/docker-registry ] || missing="$$missing docker-registry"; \
	command -v htpasswd >/dev/null || missing="$$missing apache2-utils"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get -o DPkg::Lock::Timeout=300 update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $$missing; \
	fi

# The container image, built from scratch with buildah (no base image is pulled): the release
# binary, the libraries it links, Debian's Mozilla CA set, a nonroot user. See docs/install.md.
IMAGE ?= localhost/image-reflector:dev

# The release's flags (hack/release.sh): paths of this machine remapped, so that a release
# after `make image` compiles only this crate again.
CARGO_HOME ?= $(HOME)/.cargo
RELEASE_RUSTFLAGS = --remap-path-prefix=$(CARGO_HOME)=/cargo --remap-path-prefix=$(CURDIR)/target=/target
image: export RUSTFLAGS = $(RELEASE_RUSTFLAGS)
image: image-deps
	$(CARGO) build --release --locked
	hack/build-image.sh target/release/image-reflector $(IMAGE)

# A release of the commit checked out (clean, VERSION = v + Cargo.toml's version) in DIST:
# binary, image (OCI archive), install.yaml pinned by digest, CRDs, Flux swap patches,
# manifests artifact, SBOM, SLSA provenance, SHA256SUMS (hack/release.sh, docs/release.md).
# REGISTRY/image-reflector is the repository install.yaml names.
VERSION ?=
REGISTRY ?= ghcr.io/image-reflector
DIST ?= dist
release: image-deps release-deps
	@[ -n "$(VERSION)" ] || { echo "usage: make release VERSION=v$$(sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -1) [REGISTRY=registry.example.com/platform]" >&2; exit 2; }
	hack/release.sh $(VERSION) $(REGISTRY)/image-reflector $(DIST)

# Pushes DIST to REGISTRY/image-reflector, signs the image and the manifests artifact with
# COSIGN_KEY, attests the SBOM and the provenance, and checks all with cosign verify
# (hack/release-push.sh).
release-push: image-deps release-deps
	@SIGTOOLS=cosign hack/sigtools-build.sh >/dev/null
	hack/release-push.sh $(DIST) $(REGISTRY)

# Only what a release runs: kubectl (its kustomize) and the flux CLI (`flux build artifact`,
# `flux push artifact`), not the rest of make kube and make flux.
release-deps:
	@KUBE_COMPONENTS=kubectl hack/kube-build.sh >/dev/null
	@FLUX_COMPONENTS=flux hack/flux-build.sh >/dev/null

# Reproducibility: the release made again from a fresh clone of its commit in another directory,
# later, compared file by file with DIST (hack/release-check.sh); FULL=1 builds every crate
# again, at another build path, instead of reusing the compiled dependencies.
release-check: image-deps release-deps
	FULL=$(FULL) hack/release-check.sh $(DIST)

# The release as a user installs it, on the real node: made for a TLS registry on the node's
# bridge (RELEASE_E2E_REGISTRY), pushed and signed there with a key made for the run, verified
# with cosign, installed with `kubectl apply -f install.yaml` alone, and our own gate electing
# our own image (hack/e2e-release.sh). Its DIST is what make release-check compares.
RELEASE_E2E_REGISTRY ?= 10.244.0.1:5443
RELEASE_E2E_DIST ?= target/e2e-release/dist
e2e-release: deps image-deps kube flux sigtools
	$(MAKE) --no-print-directory release VERSION=v$$(sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -1) \
		REGISTRY=$(RELEASE_E2E_REGISTRY) DIST=$(RELEASE_E2E_DIST)
	hack/e2e-release.sh $(RELEASE_E2E_DIST)

# Pushes the image to a local Distribution registry and runs it from there as the Deployment
# does (its arguments, read-only root, uid 65532, no capabilities, emptyDirs as kubelet makes
# them, the ServiceAccount's in-cluster credentials) against a real API server until /readyz
# answers: the cluster in KUBECONFIG, else one of its own (hack/with-apiserver.sh).
image-smoke: deps image kube
	@$(with_apiserver) hack/image-smoke.sh $(IMAGE)

# The image on a real single-node Kubernetes (../shared/tools/kube/cluster, as root, running the
# binaries of `make kube`): installed with `make deploy`, reconciling local registries,
# restarted, uninstalled (hack/e2e-cluster.sh).
e2e-cluster: deps image kube flux sigtools
	hack/e2e-cluster.sh $(IMAGE)

# Installs config/default (or CONFIG=config/flux-notifications, or your own kustomization) in
# the cluster of KUBECONFIG with the controller image IMG, without editing a tracked file: the
# overlay goes to target/deploy/. PULL_POLICY=Never|IfNotPresent|Always sets imagePullPolicy.
IMG ?= $(IMAGE)
CONFIG ?= config/default
deploy:
	hack/deploy.sh apply $(IMG) $(CONFIG)

# Deletes every ImagePolicy and ImageRepository while the controller still runs (it removes
# their finalizers), then everything `make deploy` installed.
undeploy:
	hack/deploy.sh delete $(IMG) $(CONFIG)

# Debian's image tools (and ca-certificates for the CA set), installed when missing.
image-deps:
	@missing=""; \
	for tool in buildah:buildah skopeo:skopeo umoci:umoci podman:podman runc:runc; do \
		command -v $${tool%%:*} >/dev/null || missing="$$missing $${tool##*:}"; \
	done; \
	[ -d /usr/share/ca-certificates/mozilla ] || missing="$$missing ca-certificates"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get -o DPkg::Lock::Timeout=300 update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $$missing; \
	fi

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	cd tests/sigtools/registry && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...
	cd tests/sigtools/judge && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...
	cd tests/sigtools/celjudge && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...
	cd tests/sigtools/tufrepo && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...
	cd tests/sigtools/trillian && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...
	cd tests/flux/kstatus-judge && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go vet ./...

fmt:
	$(CARGO) fmt --all

# Regenerates crds/ from the Rust types; a test fails when they drift.
crds:
	$(CARGO) run --quiet --locked -- crds > crds/crds.yaml
	$(CARGO) run --quiet --locked -- crds --admission > config/admission/crd.yaml

# The main job: a local registry with a few tags, scanned by `image-reflector scan` exactly as
# the controller reconciles an ImageRepository, then the ImagePolicy election over the stored tags.
run: deps
	$(CARGO) build --locked
	hack/demo.sh target/debug/image-reflector

# The Kubernetes release pinned in tests/kube/go.mod (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy, kubectl), built from its Go module into KUBE_BIN_DIR;
# rebuilt only when the pin, the flags or the Go version change (hack/kube-build.sh).
kube:
	@hack/kube-build.sh >/dev/null

# The cluster in KUBECONFIG, else an API server of its own (the built kube-apiserver and Debian's
# etcd on loopback, stopped when the command ends: hack/with-apiserver.sh); the built kubectl
# first on PATH either way.
with_apiserver = hack/with-apiserver.sh

# End-to-end against a real API server. Runs `image-reflector run` as a local process.
e2e: deps prometheus-deps kube
	@$(with_apiserver) $(CARGO) test --locked --test it -- --ignored e2e

# Flux's image-automation-controller, notification-controller and flux CLI, built from their Go
# modules (tests/flux/*/go.mod) into FLUX_BIN_DIR; a no-op once built (hack/flux-build.sh).
flux:
	@hack/flux-build.sh >/dev/null

# Flux itself beside our controller on the API server of `make e2e`: image-automation-controller
# commits to a Git server on loopback, notification-controller forwards our events, the flux CLI
# drives our objects (tests/it/flux/).
e2e-flux: deps kube flux
	@$(with_apiserver) $(CARGO) test --locked --test it -- --ignored flux:: --skip flux::crd_
	@# Swap CRDs, one after the other: on an API server of their own, apart from the tests above.
	@$(with_apiserver) $(CARGO) test --locked --test it -- --ignored flux::crd_ --test-threads=1

# The signing tools the signature tests run: the cosign CLI v3 and the last v2, the notation CLI,
# and a registry that serves the OCI referrers API, built from their Go modules
# (tests/sigtools/*/go.mod) into SIGTOOLS_BIN_DIR; a no-op once built (hack/sigtools-build.sh).
sigtools:
	@hack/sigtools-build.sh >/dev/null

# Images signed by the real tools, elected (or held back, saying why) by `scan` and by the
# controller on the API server of `make e2e` (tests/it/signatures/).
e2e-signatures: deps kube sigtools
	@$(with_apiserver) $(CARGO) test --locked --test it -- --ignored signatures::

# cargo-mutants (cargo install cargo-mutants) over the signature verification (src/verify/ and
# the public-good root's TUF client, src/registry/sigstore_root/; the
# registry's fetching of signatures is the integration suite's to test), the gates that judge
# an image's facts (src/policy/gates/), the election that walks them with the downgrade guard
# and the status record (src/controller/image_policy/election/, downgrade.rs, record.rs) and
# the frame's handoff, the attestation conditions' evaluator (src/policy/conditions/) and the
# referrers' reading: every mutant must be caught. First by the unit tests (`--lib`, one
# incremental build each); what they miss is then run again (`--iterate`) with the integration
# tests too (a real registry and Secrets, which the election's fact source and trusted keys
# need). docs/development.md lists the equivalent mutants, which .cargo/mutants.toml excludes.
# Not in CI: about two hours on 2 cores.
MUTATED = -f 'src/verify/**/*.rs' -f 'src/policy/gates/**/*.rs' \
	-f 'src/controller/image_policy/election/**/*.rs' -f src/controller/image_policy/downgrade.rs \
	-f src/controller/image_policy/record.rs -f src/controller/frame/handoff.rs \
	-f 'src/controller/schema/*.rs' -f src/controller/frame/confirm.rs -f src/api/beyond_flux.rs \
	-f src/controller/image_policy/serving.rs \
	-f 'src/fair.rs' -f 'src/fair/*.rs' -f src/registry/budget/share.rs \
	-f src/controller/frame/handoff/room.rs -f src/controller/events/notify/queue.rs \
	-f 'src/registry/sigstore_root/*.rs' \
	-f 'src/policy/conditions/*.rs' -f src/api/attestations.rs \
	-f src/registry/signatures/referrers.rs -f src/controller/door/digests.rs \
	-e '**/tests.rs' -e '**/tests/**' -e '**/model.rs' -e '**/property.rs' -e src/verify/fuzz.rs
mutants: deps
	@command -v cargo-mutants >/dev/null || { echo "cargo-mutants not found: cargo install cargo-mutants" >&2; exit 1; }
	cargo mutants --no-shuffle --copy-target=true -j $${MUTANTS_JOBS:-2} --cargo-arg=--lib $(MUTATED) \
		-- -- verify:: policy::gates controller::image_policy controller::door controller::frame controller::schema \
		controller::object api::beyond_flux cli::crds fair:: registry::budget controller::events::notify \
		registry::sigstore_root policy::conditions api::attestations registry::signatures; \
	status=$$?; [ $$status -eq 0 ] || [ $$status -eq 2 ] || exit $$status; \
	cargo mutants --iterate --no-shuffle --copy-target=true -j $${MUTANTS_JOBS:-2} $(MUTATED) \
		-- --lib --test it -- verify:: policy::gates controller:: cli::gates fair:: registry::budget \
		registry::shares registry::sigstore_root policy::conditions policy::cel_conformance \
		api::attestations registry::signatures

# promtool (Debian's prometheus package), for the metrics e2e check; installed when missing.
prometheus-deps:
	@command -v promtool >/dev/null || { \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get -o DPkg::Lock::Timeout=300 update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends prometheus; }

bench: export BENCH_DATA ?= $(SHARED)/data
bench:
	$(CARGO) bench --locked --bench select -- --output-format bencher
	$(CARGO) bench --locked --bench store
	$(CARGO) bench --locked --bench registry
	$(CARGO) bench --locked --bench controller
	$(CARGO) bench --locked --bench hostile
	$(CARGO) bench --locked --bench gates

# What the door (config/admission) costs a request on the real API server: a Deployment of 5
# containers against 2,048 verified digests, enforced and unlabelled (hack/bench-admission.sh).
bench-admission: kube
	hack/bench-admission.sh

# The real `run` against a real API server (KUBECONFIG, else hack/with-apiserver.sh's)
# and the in-repo fake registry at 1K x 10K, 5K x 400 and 10K x 100: cold start, steady
# cycles, warm restart and triggered scans. Rewrites its section of docs/benchmarks.md;
# `make bench-controller SCENARIOS=1000x10000` runs one and only prints it.
SCENARIOS ?=
# PEER=flux: Flux's image-reflector-controller (Badger, then FluxStorage) on the same scenarios,
# one after the other, side by side in docs/benchmarks.md.
# Ours is the release executable, as the image ships it.
bench-controller: kube $(if $(PEER),flux)
	$(CARGO) build --release --locked
	@mkdir -p target/bench-controller && cp target/release/image-reflector target/bench-controller/
	@PEER=$(PEER) BENCH_BINARY=$(CURDIR)/target/bench-controller/image-reflector \
		$(with_apiserver) $(CARGO) bench --locked --bench controller_run -- $(SCENARIOS)

# Runs Flux's policy vectors through the binary (needs ../shared beside the checkout).
conformance:
	$(CARGO) build --locked
	python3 $(SHARED)/tools/conformance --bin target/debug/image-reflector \
		--deviations docs/conformance-deviations.txt

# Every cargo-fuzz target for FUZZ_TIME seconds each. An input running longer than
# FUZZ_TIMEOUT seconds is a finding, like a crash: libFuzzer writes it to
# fuzz/regressions/<target>/, which `cargo test` replays (tests/it/policy/fuzz_replay.rs); commit it
# with the fix. New coverage goes to fuzz/target/corpus/<target> (not committed). cargo-fuzz
# needs nightly features: RUSTC_BOOTSTRAP=1 lets the stable toolchain build it.
FUZZ_TIME ?= 60
FUZZ_TIMEOUT ?= 3
FUZZ_TARGETS ?= $(sort $(basename $(notdir $(wildcard fuzz/fuzz_targets/*.rs))))

fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install --locked cargo-fuzz
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		mkdir -p target/corpus/$$target regressions/$$target && \
		echo "fuzz: $$target for $(FUZZ_TIME)s" && \
		RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run -O $$target target/corpus/$$target corpus/$$target -- \
			-max_total_time=$(FUZZ_TIME) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 \
			-artifact_prefix=regressions/$$target/ -print_final_stats=1 || exit 1; \
	done
