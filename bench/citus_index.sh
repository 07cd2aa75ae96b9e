#!/usr/bin/env bash
# bench/citus_index.sh -- benchmark (not a test): CREATE INDEX on a Citus distributed table, the
# background job (a job per shard placement on its node, nodes in parallel) against Citus's own
# CREATE INDEX CONCURRENTLY (shard after shard) and its plain CREATE INDEX (all shards at once,
# writes blocked), on one cluster, side by side.
#
# As root: builds Citus (../shared/deps/citus) if needed, installs background_ddl, starts a
# coordinator and two workers on this machine (default settings but for shared_buffers, both
# libraries preloaded), fills a distributed table (32 shards) with ROWS rows, and for ROUNDS
# rounds builds the same index each way (dropped between), in alternating order, while WRITERS
# pgbench clients insert into the table through the coordinator with lock_timeout = 1s. Prints
# the medians, the ratios (background / other) and the writers' statements that failed on a lock
# timeout during each build.
#
# Usage: bench/citus_index.sh   (env ROWS, default 4000000; ROUNDS, default 3; WRITERS, default 2;
#   JOBS_PER_NODE, default 2: background_ddl.citus_jobs_per_node, and the nodes' max_workers)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

ROWS=${ROWS:-4000000}
ROUNDS=${ROUNDS:-3}
WRITERS=${WRITERS:-2}
JOBS_PER_NODE=${JOBS_PER_NODE:-2}
BASE_PORT=${BASE_PORT:-54340}

need_root
ensure_packages
if ! [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
    build=$(citus_build_script) || { echo "no Citus and no script to build it"; exit 1; }
    bash "$build"
fi
build_install

DIR=$(mktemp -d /tmp/background_ddl_citus.XXXXXX)
chown postgres: "$DIR"
PORTS=($BASE_PORT $((BASE_PORT + 1)) $((BASE_PORT + 2)))
stop_all() {
    for port in "${PORTS[@]}"; do
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DIR/n$port" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$DIR"
}
trap stop_all EXIT
for port in "${PORTS[@]}"; do
    runuser -u postgres -- "$PGBIN/initdb" -D "$DIR/n$port" -U postgres --auth=trust -E UTF8 \
        --locale=C.UTF-8 >/dev/null
    cat >>"$DIR/n$port/postgresql.conf" <<CONF
port = $port
listen_addresses = 'localhost'
unix_socket_directories = '$DIR'
shared_preload_libraries = 'citus, background_ddl'
citus.node_conninfo = 'sslmode=disable'
shared_buffers = 1GB
max_worker_processes = 24
max_wal_size = 8GB
background_ddl.citus_jobs_per_node = $JOBS_PER_NODE
background_ddl.max_workers = $((JOBS_PER_NODE > 2 ? JOBS_PER_NODE : 2))
CONF
    echo "host all all 127.0.0.1/32 trust" >>"$DIR/n$port/pg_hba.conf"
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$DIR/n$port" -l "$DIR/n$port.log" -w start >/dev/null
    "$PGBIN/psql" -X -q -h "$DIR" -p "$port" -U postgres -c "CREATE EXTENSION citus"
done
coord() { "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$DIR" -p "${PORTS[0]}" -U postgres "$@"; }
coord -c "SELECT citus_set_coordinator_host('localhost', ${PORTS[0]})" >/dev/null
coord -c "SELECT citus_add_node('localhost', ${PORTS[1]})" -c "SELECT citus_add_node('localhost', ${PORTS[2]})" >/dev/null
echo "== loading $ROWS rows into a distributed table"
coord -c "CREATE EXTENSION background_ddl" \
      -c "CREATE TABLE ev (id bigint, account int, payload text)" \
      -c "SELECT create_distributed_table('ev', 'id')" \
      -c "INSERT INTO ev SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g" \
      -c "VACUUM ANALYZE ev" >/dev/null

cat >"$DIR/writer.sql" <<'SQL'
\set id random(1000000000, 2000000000)
INSERT INTO ev VALUES (:id, :id % 1000, 'w');
SQL
chown postgres: "$DIR/writer.sql"

# build WAY: time one build of the index, with writers running; prints "seconds lock_failures"
build() {
    local way=$1 start end failures
    PGOPTIONS='-c lock_timeout=1s' runuser -u postgres -- "$PGBIN/pgbench" -n -h "$DIR" \
        -p "${PORTS[0]}" -U postgres -c "$WRITERS" -T 100000 -f "$DIR/writer.sql" postgres \
        >"$DIR/pgbench.log" 2>&1 &
    local writers=$!
    sleep 1
    start=$(date +%s.%N)
    case $way in
        background)
            job=$(coord -c "SET background_ddl = on" -c "CREATE INDEX ev_idx ON ev (account, payload)" \
                        -c "SELECT last_ddl_job()" | tail -n1)
            coord -c "CALL await_ddl($job)" >/dev/null ;;
        concurrently) coord -c "CREATE INDEX CONCURRENTLY ev_idx ON ev (account, payload)" ;;
        plain) coord -c "CREATE INDEX ev_idx ON ev (account, payload)" ;;
    esac
    end=$(date +%s.%N)
    kill "$writers" 2>/dev/null; wait "$writers" 2>/dev/null || true
    failures=$(grep -c "lock timeout" "$DIR/pgbench.log" || true)
    coord -c "DROP INDEX ev_idx" -c "CHECKPOINT" >/dev/null
    echo "$(echo "$end - $start" | bc) $failures"
}

WAYS=(background concurrently plain)
declare -A times failures
for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then order=("${WAYS[@]}"); else order=(plain concurrently background); fi
    for way in "${order[@]}"; do
        read -r seconds failed <<<"$(build "$way")"
        times[$way]="${times[$way]:-} $seconds"
        failures[$way]=$(( ${failures[$way]:-0} + failed ))
        printf 'round %d %-13s %8.2f s, %d writer statements failed on a lock timeout\n' \
            "$round" "$way" "$seconds" "$failed"
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
bg=$(echo "${times[background]}" | median)
cic=$(echo "${times[concurrently]}" | median)
plain=$(echo "${times[plain]}" | median)
echo
echo "$ROWS rows, 32 shards on 2 workers, $WRITERS writers, medians of $ROUNDS:"
printf '  background job          %8.2f s  (writers failed on a lock: %d)\n' "$bg" "${failures[background]}"
printf '  CREATE INDEX CONCURRENTLY %6.2f s  (writers failed on a lock: %d)  ratio background/CIC %.2f\n' \
    "$cic" "${failures[concurrently]}" "$(echo "$bg / $cic" | bc -l)"
printf '  CREATE INDEX              %6.2f s  (writers failed on a lock: %d)  ratio background/plain %.2f\n' \
    "$plain" "${failures[plain]}" "$(echo "$bg / $plain" | bc -l)"
