# The controller image for your own CI (docker build / buildah bud): the same contents as
# `make image`, which builds it here from scratch without pulling a base image.
FROM docker.io/library/rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked

# Gathers the root filesystem with the same script `make image` uses.
FROM docker.io/library/debian:bookworm-slim AS rootfs
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/image-reflector /image-reflector
COPY hack/image-rootfs.sh /image-rootfs.sh
RUN /image-rootfs.sh /image-reflector /rootfs

FROM scratch
COPY --from=rootfs /rootfs/ /
USER 65532:65532
EXPOSE 8080 9440
ENTRYPOINT ["/usr/local/bin/image-reflector"]
CMD ["run"]
