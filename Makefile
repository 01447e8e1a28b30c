# image-reflector: build, test and run targets. `make test` is what CI runs (via .ci/run).
CARGO ?= cargo
SHARED ?= ../shared

.PHONY: all build test lint fmt crds run e2e bench conformance deps

all: build

build:
	$(CARGO) build --release

# Installs what the tests need when it is missing, then runs the whole suite.
test: deps
	$(CARGO) test --locked

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
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Regenerates crds/ from the Rust types; a test fails when they drift.
crds:
	$(CARGO) run --quiet --locked -- crds > crds/crds.yaml

# The main job. Until the controller lands, it is the offline election: which tag would the
# sample ImagePolicy pick from the example tag list, and why.
run:
	$(CARGO) run --quiet --release --locked -- select \
		-f config/samples/imagepolicy_semver.yaml \
		--tags-file docs/examples/podinfo-tags.txt --explain

# End-to-end against a real API server: the cluster in KUBECONFIG, else the one
# ../shared/tools/kube starts on loopback. Runs `image-reflector run` as a local process.
e2e: deps
	@if [ -z "$$KUBECONFIG" ]; then \
		if [ -x $(SHARED)/tools/kube/apiserver ]; then \
			eval "$$($(SHARED)/tools/kube/apiserver start | grep '^export ')"; \
		else \
			echo "make e2e needs KUBECONFIG, or $(SHARED)/tools/kube/apiserver to start an API server" >&2; exit 2; \
		fi; \
	fi; \
	command -v kubectl >/dev/null || { echo "make e2e needs kubectl" >&2; exit 2; }; \
	echo "e2e against $$KUBECONFIG"; \
	$(CARGO) test --locked --test it -- --ignored e2e

bench:
	$(CARGO) bench --locked --bench select -- --output-format bencher
	$(CARGO) bench --locked --bench store
	$(CARGO) bench --locked --bench registry

# Runs Flux's policy vectors through the binary (needs ../shared beside the checkout).
conformance:
	$(CARGO) build --locked
	python3 $(SHARED)/tools/conformance --bin target/debug/image-reflector \
		--deviations docs/conformance-deviations.txt
