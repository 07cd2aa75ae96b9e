# scripts/lib.sh -- shared helpers, sourced by scripts/test, scripts/demo and bench/mv_build.sh.
#
#   need_root                 refuse to run unless root
#   ensure_packages           apt-get install the Debian packages we need (only if some are missing)
#   build_install             make clean, make (-Werror), make install, from the repo, as root
#   cluster_start [conf...]   initdb + start a throwaway cluster owned by the postgres OS user in a
#                             mktemp dir (unix socket only, background_ddl preloaded), export PG* vars
#   cluster_stop              stop it and remove its directory (safe to call twice; use in a trap)
#   sql ARGS...               psql -X -At -v ON_ERROR_STOP=1 against that cluster
#   citus_build_script        where the script that builds Citus is, if anywhere

PG_MAJOR=15
PGBIN=/usr/lib/postgresql/$PG_MAJOR/bin
export PG_CONFIG=$PGBIN/pg_config
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACKAGES=(postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-$PG_MAJOR-partman libpq-dev libipc-run-perl libio-pty-perl make gcc)

# Deterministic locale (C.UTF-8 always exists on Debian); never read stdin.
export LANG=C.UTF-8
unset LC_ALL LC_CTYPE LC_COLLATE LC_MESSAGES LC_MONETARY LC_NUMERIC LC_TIME LANGUAGE
exec </dev/null

need_root() {
    if [ "$(id -u)" != 0 ]; then echo "$0: must run as root" >&2; exit 1; fi
}

ensure_packages() {
    local p missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing missing packages: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${PACKAGES[@]}"
}

build_install() {
    echo "== building and installing background_ddl (PG_CONFIG=$PG_CONFIG)"
    (cd "$REPO" && make -s clean && make -s COPT=-Werror && make -s install)
}

# The script that builds and installs Citus (a test dependency): $BGDDL_CITUS_BUILD, or the
# shared dependencies next to the repository.  Fails if there is none.
citus_build_script() {
    local candidate
    for candidate in "${BGDDL_CITUS_BUILD:-}" "$REPO/../shared/deps/citus/build.sh"; do
        if [ -n "$candidate" ] && [ -f "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

cluster_start() {
    CLUSTER_DIR=$(mktemp -d /tmp/background_ddl.XXXXXX)
    chown postgres: "$CLUSTER_DIR"
    export PGHOST=$CLUSTER_DIR PGPORT=${PGPORT:-54329} PGUSER=postgres PGDATABASE=postgres
    echo "== starting throwaway cluster in $CLUSTER_DIR (port $PGPORT)"
    runuser -u postgres -- "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -U postgres --auth=trust \
        -E UTF8 --locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log" 2>&1 \
        || { cat "$CLUSTER_DIR/initdb.log"; return 1; }
    {
        echo "port = $PGPORT"
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$CLUSTER_DIR'"
        echo "shared_preload_libraries = 'background_ddl'"
        printf '%s\n' "$@"
    } >>"$CLUSTER_DIR/data/postgresql.conf"
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
        -w -t 60 start >/dev/null \
        || { cat "$CLUSTER_DIR/server.log"; return 1; }
}

cluster_stop() {
    [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
    echo "== stopping and removing cluster $CLUSTER_DIR"
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w -t 60 stop >/dev/null 2>&1 \
        || runuser -u postgres -- "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m immediate -w stop >/dev/null 2>&1 \
        || true
    rm -rf "$CLUSTER_DIR"
    CLUSTER_DIR=
}

sql() {
    "$PGBIN/psql" -X -At -v ON_ERROR_STOP=1 "$@"
}
