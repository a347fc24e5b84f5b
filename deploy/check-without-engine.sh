#!/usr/bin/env bash
# Checks the image and the compose deployment where no container engine runs (the development
# machine), as root:
#   bash deploy/check-without-engine.sh .build/release/storekeeper
# with the binary built as the Dockerfile builds it (swift build -c release --product storekeeper
# --static-swift-stdlib -Xlinker --strip-debug). It makes the runtime stage's filesystem —
# debootstrap bookworm (minbase) plus the Dockerfile's runtime RUN instruction, taken from the
# Dockerfile — and runs the binary in it by chroot as uid 10001 with the image's ENV and working
# directory, deploy/storekeeper.json at /etc/storekeeper and generated keys at /run/secrets:
# config check, migrate, two serve instances on one PostgreSQL database (.ci/postgres.sh), the
# health command, and Caddy (Debian's) with deploy/Caddyfile, its upstreams moved to loopback ports.
# Needs debootstrap and caddy (apt-get install debootstrap caddy), curl, openssl, and Apple Root CA - G3
# in ../shared/vectors/apple-real (or APPLE_ROOT=FILE).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
binary=$(realpath "${1:?usage: check-without-engine.sh BINARY}")
work=${STOREKEEPER_CHECK_DIR:-/tmp/storekeeper-engine-check}
root=$work/rootfs
apple_root=${APPLE_ROOT:-$repo/../shared/vectors/apple-real/AppleRootCA-G3.cer}
mkdir -p "$work"

if [ ! -x "$root/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >&2
fi
if ! chroot "$root" id storekeeper >/dev/null 2>&1; then
    # The runtime stage's RUN instruction, as the Dockerfile has it.
    awk '/^FROM \$\{RUNTIME_IMAGE\}/ {stage = 1; next}
         stage && /^RUN / {sub(/^RUN /, ""); running = 1}
         running && /^[A-Z]+ / && !/^RUN / {exit}
         running {print}' "$repo/Dockerfile" > "$work/runtime-run.sh"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    chroot "$root" sh -e /dev/stdin < "$work/runtime-run.sh" >&2
fi

secrets=$work/secrets
if [ ! -f "$secrets/play-service-account.json" ]; then
    mkdir -p "$secrets"
    openssl rand -hex 32 > "$secrets/backend-api-key"
    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$secrets/app-store-key.p8"
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$secrets/rsa.pem" 2>/dev/null
    python3 -c 'import json, sys; print(json.dumps({"type": "service_account", "project_id": "example-project",
        "private_key_id": "0123456789abcdef", "private_key": open(sys.argv[1]).read(),
        "client_email": "storekeeper@example-project.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token"}))' "$secrets/rsa.pem" > "$secrets/play-service-account.json"
    rm "$secrets/rsa.pem"
fi

pg=$(bash "$repo/.ci/postgres.sh")
pg=${pg%/*}
db=storekeeper_engine_check
psql "$pg/storekeeper" -qc "drop database if exists $db" -c "create database $db"
storage_url="$pg/$db?sslmode=disable"

install -m 0755 "$binary" "$root/usr/local/bin/storekeeper"
install -D -m 0755 /opt/swift/usr/libexec/swift/linux/swift-backtrace-static "$root/usr/local/libexec/swift-backtrace-static"
install -m 0644 "$apple_root" "$root/usr/share/storekeeper/AppleRootCA-G3.cer"
install -m 0644 "$repo/deploy/storekeeper.json" "$root/etc/storekeeper/storekeeper.json"
install -d -m 0755 "$root/run/secrets"
install -m 0444 "$secrets/backend-api-key" "$root/run/secrets/backend-api-key"
install -m 0444 "$secrets/app-store-key.p8" "$root/run/secrets/app-store-key"
install -m 0444 "$secrets/play-service-account.json" "$root/run/secrets/play-service-account"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"

# As the image runs it: its user, its working directory, its ENV (plus STORAGE_URL, as compose sets).
in_image() {
    ${EXEC:-} chroot --userspec=10001:10001 "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin \
        SERVER_HOST=0.0.0.0 STORAGE_URL="$storage_url" \
        SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/swift-backtrace-static \
        ${EXTRA_ENV:-} /bin/sh -c 'cd /var/lib/storekeeper && exec "$0" "$@"' storekeeper "$@"
}
echo "== the binary's libraries, in the runtime filesystem"; chroot "$root" ldd /usr/local/bin/storekeeper
echo "== config check"; in_image config check /etc/storekeeper/storekeeper.json
echo "== migrate"; in_image migrate --config /etc/storekeeper/storekeeper.json
echo "== two instances"
EXEC=exec EXTRA_ENV=SERVER_PORT=18081 in_image serve --config /etc/storekeeper/storekeeper.json > "$work/i1.out" 2> "$work/i1.err" &
i1=$!
EXEC=exec EXTRA_ENV=SERVER_PORT=18082 in_image serve --config /etc/storekeeper/storekeeper.json > "$work/i2.out" 2> "$work/i2.err" &
i2=$!
caddy_pid=""
cleanup() {
    kill -TERM $i1 $i2 $caddy_pid 2>/dev/null || true
    wait 2>/dev/null || true
    umount "$root/proc" "$root/dev" 2>/dev/null || true
    psql "$pg/storekeeper" -qc "drop database if exists $db" || true
}
trap cleanup EXIT
for _ in $(seq 200); do grep -q listening "$work/i1.out" && grep -q listening "$work/i2.out" && break; sleep 0.3; done
cat "$work/i1.out" "$work/i2.out"
echo "== storekeeper health (the image's HEALTHCHECK), in the image"
in_image health --url http://127.0.0.1:18081/health
in_image health --url http://127.0.0.1:18082/ready
echo "== Caddy with deploy/Caddyfile"
{ printf '{\n\tadmin off\n}\n'; sed 's/storekeeper-1:8080 storekeeper-2:8080/127.0.0.1:18081 127.0.0.1:18082/' "$repo/deploy/Caddyfile"; } > "$work/Caddyfile"
STOREKEEPER_SITE=:18080 caddy run --config "$work/Caddyfile" --adapter caddyfile > "$work/caddy.log" 2>&1 &
caddy_pid=$!
sleep 3
key=$(cat "$secrets/backend-api-key")
answered() { curl -s "http://127.0.0.1:$1/metrics" | awk 'index($0, "route=\"/v1/customers/{id}\"") && index($0, "status=\"200\"") {s += $NF} END {print s + 0}'; }
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
gets() { for _ in $(seq 20); do status -H "Authorization: Bearer $key" http://127.0.0.1:18080/v1/customers/alice; echo; done | sort | uniq -c | tr -s ' \n' ' '; }
echo "PUT /v1/customers/alice through the balancer: $(status -X PUT -H "Authorization: Bearer $key" http://127.0.0.1:18080/v1/customers/alice)"
echo "20 GETs through the balancer, count and status:$(gets)"
echo "answered by instance 1: $(answered 18081), by instance 2: $(answered 18082)"
echo "/metrics through the balancer: $(status http://127.0.0.1:18080/metrics)"
echo "== instance 1 stopped by SIGTERM"
kill -TERM $i1
rc=0; wait $i1 || rc=$?
echo "instance 1 exit status: $rc"
sleep 6
before=$(answered 18082)
echo "20 GETs through the balancer, count and status:$(gets)"
echo "answered by instance 2: $(( $(answered 18082) - before ))"
