#!/usr/bin/env bash
# bench/writer_overhead.sh -- benchmark (not a test): what a build costs the writers of its base
# table.  pgbench updates and inserts rows of `events` (4 clients, full speed) while the same
# materialized view is built, once blocking and once as a background job (whose capture
# trigger logs every changed row).  For each build it reports the writers' throughput during the
# build, the ratio background/blocking, and the longest single write (the worst stall).
#
# Usage: bench/writer_overhead.sh [ROWS]   (env ROWS, default 2000000; QUERY; CLIENTS, default 4)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

ROWS=${1:-${ROWS:-2000000}}
CLIENTS=${CLIENTS:-4}
QUERY=${QUERY:-"SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"}
export PGPORT=${PGPORT:-54331}

need_root
ensure_packages
build_install
trap cluster_stop EXIT
cluster_start "shared_buffers = 1GB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" "autovacuum = off"
B=$CLUSTER_DIR

echo "== loading $ROWS rows into events"
sql -q -c "CREATE EXTENSION background_ddl" \
    -c "CREATE TABLE events (id bigserial PRIMARY KEY, account int NOT NULL, payload text NOT NULL)
        WITH (fillfactor = 90)" \
    -c "INSERT INTO events (account, payload) SELECT g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g" \
    -c "VACUUM ANALYZE events"
cat >"$B/writes.sql" <<EOS
\\set id random(1, $ROWS)
\\set acc random(0, 999)
UPDATE events SET payload = md5(random()::text) WHERE id = :id;
INSERT INTO events (account, payload) VALUES (:acc, 'new');
EOS

# measure MODE: run pgbench around one build; print "tps max_latency_ms build_ms"
measure() {
    local mode=$1 t0 t1 job state
    rm -f "$B"/pgbench_log_"$mode".*
    (cd "$B" && "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T 40 -f writes.sql -l --log-prefix="pgbench_log_$mode" \
        >"$B/pgbench_$mode.out" 2>&1) &
    local writer=$!
    sleep 3
    t0=$(date +%s%N)
    if [ "$mode" = blocking ]; then
        sql -q -c "CREATE MATERIALIZED VIEW mv_$mode AS $QUERY"
    else
        job=$(sql -c "SET background_ddl = on" -c "CREATE MATERIALIZED VIEW mv_$mode AS $QUERY" \
                  -c "SELECT last_ddl_job()" | tail -n1)
        for _ in $(seq 3000); do
            state=$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")
            [ "$state" = succeeded ] && break
            [ "$state" = running ] || [ "$state" = queued ] || { echo "job $job $state" >&2; exit 1; }
            sleep 0.05
        done
    fi
    t1=$(date +%s%N)
    wait "$writer"
    # per-transaction log: client tx latency_us script epoch_s epoch_us
    cat "$B"/pgbench_log_"$mode".* | awk -v t0="$t0" -v t1="$t1" '
        { end_us = $5 * 1000000 + $6; if (end_us * 1000 >= t0 && end_us * 1000 <= t1) { n++; if ($3 > max) max = $3 } }
        END { printf "%.0f %.1f %.0f\n", n / ((t1 - t0) / 1e9), max / 1000, (t1 - t0) / 1e6 }'
}

echo "== writers during a blocking build"
read -r block_tps block_max block_ms <<<"$(measure blocking)"
echo "== writers during a background build"
read -r bg_tps bg_max bg_ms <<<"$(measure background)"

echo
printf '%-34s %12s %12s\n' "" blocking background
printf '%-34s %12s %12s\n' "build time (ms)" "$block_ms" "$bg_ms"
printf '%-34s %12s %12s\n' "writer throughput during it (tx/s)" "$block_tps" "$bg_tps"
printf '%-34s %12s %12s\n' "longest write (ms)" "$block_max" "$bg_max"
printf '%-34s %12s\n' "throughput ratio background/blocking" \
    "$(awk -v a="$bg_tps" -v b="$block_tps" 'BEGIN { printf "%.2f", a / b }')"
