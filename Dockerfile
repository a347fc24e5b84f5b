# syntax=docker/dockerfile:1
#
# Storekeeper's container image: built in the official Swift image, run on Debian slim.
# The Swift runtime is linked into the binary (--static-swift-stdlib) and SQLite and BoringSSL are
# compiled in by their packages, so the runtime image adds only CA certificates and time zones.
# Both stages are Debian 12 (bookworm): the binary links the build image's glibc, so change the two
# images together.
#
#   docker build -t storekeeper .
#   docker run --rm -p 8080:8080 -v ./storekeeper.json:/etc/storekeeper/storekeeper.json:ro storekeeper
#
# docs/operations.md ("Containers") describes the image, compose.yaml and what goes where.

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The dependencies in a layer of their own, rebuilt only when the manifest changes.
COPY Package.swift ./
RUN swift package resolve
# The manifest names the test targets too, so their folders must exist; only the CLI is built.
COPY Sources ./Sources
COPY Tests ./Tests
# --strip-debug drops the DWARF (most of the size) but keeps the symbols crash backtraces name.
RUN swift build -c release --product storekeeper --static-swift-stdlib -Xlinker --strip-debug \
    && mkdir /staging \
    && cp "$(swift build -c release --show-bin-path)/storekeeper" /staging/ \
    && cp /usr/libexec/swift/linux/swift-backtrace-static /staging/

FROM ${RUNTIME_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 storekeeper \
    && useradd --system --uid 10001 --gid storekeeper --home-dir /var/lib/storekeeper --no-create-home \
        --shell /usr/sbin/nologin storekeeper \
    && install -d -o storekeeper -g storekeeper -m 0750 /var/lib/storekeeper \
    && install -d -m 0755 /etc/storekeeper /usr/share/storekeeper
# Apple Root CA - G3, which every App Store app's appleRootFiles names; the checksum is the
# certificate's SHA-256 fingerprint, the one the server pins.
ADD --checksum=sha256:63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179 --chmod=0644 \
    https://www.apple.com/certificateauthority/AppleRootCA-G3.cer /usr/share/storekeeper/AppleRootCA-G3.cer
COPY --from=build /staging/storekeeper /usr/local/bin/storekeeper
COPY --from=build /staging/swift-backtrace-static /usr/local/libexec/swift-backtrace-static
# A crash prints a symbolicated backtrace of every thread to standard error (the log).
ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/swift-backtrace-static
# Listen on every interface of the container (the environment overrides the file's server.host).
ENV SERVER_HOST=0.0.0.0
USER storekeeper:storekeeper
# A SQLite database (a relative storage.url) lives here; on PostgreSQL nothing is written.
WORKDIR /var/lib/storekeeper
VOLUME /var/lib/storekeeper
EXPOSE 8080
# storekeeper health asks /health (no curl in the image); another server.port needs --url here.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["storekeeper", "health"]
ENTRYPOINT ["storekeeper"]
CMD ["serve", "--config", "/etc/storekeeper/storekeeper.json"]
