#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the storage tests and prints its URL on stdout (all
# else goes to stderr):
#   postgres://storekeeper:storekeeper@127.0.0.1:PORT/storekeeper
# Installs Debian's postgresql if missing, keeps its cluster in $STOREKEEPER_PG_DATA (default
# /tmp/storekeeper-postgres), listens on loopback only, on 5432 or the next free port. Runs as
# root without interaction; running it again while the server is up just prints the URL.
# The server is tuned for tests (no fsync): never point it at data you want to keep.
set -euo pipefail

data_dir="${STOREKEEPER_PG_DATA:-/tmp/storekeeper-postgres}"
first_port="${STOREKEEPER_PG_PORT:-5432}"
role=storekeeper
password=storekeeper
database=storekeeper

log() { echo "postgres.sh: $*" >&2; }

find_bin_dir() {
    local candidates
    candidates=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V || true)
    for dir in $candidates; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/psql" ]; then bin_dir="$dir"; fi
    done
    [ -n "${bin_dir:-}" ]
}

bin_dir=""
if ! find_bin_dir; then
    log "installing PostgreSQL from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    find_bin_dir || { log "PostgreSQL installed but initdb/pg_ctl not found under /usr/lib/postgresql"; exit 1; }
fi

# initdb and the server refuse to run as root: run them as the postgres user the package created.
as_postgres() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    log "creating the postgres system user"
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

if [ ! -f "$data_dir/PG_VERSION" ]; then
    log "initializing a cluster in $data_dir"
    mkdir -p "$data_dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$data_dir"
    chmod 700 "$data_dir"
    as_postgres "$bin_dir/initdb" -D "$data_dir" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >&2
fi

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if as_postgres "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1; then
    # Line 4 of postmaster.pid is the port the running server listens on.
    port=$(sed -n 4p "$data_dir/postmaster.pid")
    log "already running on port $port"
else
    port="$first_port"
    while port_in_use "$port"; do port=$((port + 1)); done
    log "starting on 127.0.0.1:$port"
    as_postgres "$bin_dir/pg_ctl" -D "$data_dir" -l "$data_dir/server.log" -w -t 60 start -o \
        "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$data_dir -c max_connections=300 \
         -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >&2 || {
        log "the server did not start; its log:"
        tail -n 50 "$data_dir/server.log" >&2 || true
        exit 1
    }
fi

psql_admin() { as_postgres "$bin_dir/psql" -h "$data_dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtA "$@"; }

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$role'")" != 1 ]; then
    log "creating role $role"
    psql_admin -c "CREATE ROLE $role LOGIN CREATEDB PASSWORD '$password'" >&2
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$database'")" != 1 ]; then
    log "creating database $database"
    psql_admin -c "CREATE DATABASE $database OWNER $role" >&2
fi

echo "postgres://$role:$password@127.0.0.1:$port/$database"
