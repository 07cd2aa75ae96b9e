#!/usr/bin/env bash
# bench/worker_memory.sh -- benchmark (not a test): the private memory of a job worker as the
# table grows.
#
# (As root, or on a running server without root: bench/lib.sh.)
# As root: builds and installs, starts a throwaway cluster, and for each size in SIZES builds a
# background materialized view over a table of that many rows while a writer changes rows of it
# (so that catch-up passes run too). Every 50 ms it reads RssAnon (private, anonymous memory:
# what the worker allocated itself, not shared buffers) of the job's worker from /proc, and
# prints the peak for each size, and the growth per million rows.
#
# Usage: bench/worker_memory.sh        (env SIZES, default "1000000 8000000")
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

SIZES=${SIZES:-"1000000 8000000"}
export PGPORT=${PGPORT:-54331}

bench_server "shared_buffers = 512MB" "max_wal_size = 4GB" "autovacuum = off"
sql -q -c "CREATE EXTENSION background_ddl"

# Peak RssAnon (kB) of the worker of job $1, sampled until the job ends
peak_rss() {
    local job=$1 peak=0 pid rss state
    while :; do
        state=$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")
        case $state in succeeded|failed|cancelled) break ;; esac
        pid=$(sql -c "SELECT pid FROM pg_stat_background_ddl WHERE id = $job")
        if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
            rss=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
            [ "${rss:-0}" -gt "$peak" ] && peak=$rss
        fi
        sleep 0.05
    done
    [ "$state" = succeeded ] || { echo "job $job $state" >&2; exit 1; }
    echo "$peak"
}

results=()
for rows in $SIZES; do
    echo "== $rows rows"
    bench_fill_events "$rows"
    sql -q -c "ALTER TABLE events ADD PRIMARY KEY (id)"
    # A writer: 4 clients updating random rows throughout the build
    echo "\\set id random(1, $rows)
UPDATE events SET payload = md5(random()::text) WHERE id = :id;" >"$B/update.sql"
    bench_writer update -n -c 4 -T 3600 -f update.sql
    job=$(sql -c "SET background_ddl = on" \
        -c "CREATE MATERIALIZED VIEW mv AS SELECT id, account, upper(payload) AS p FROM events" \
        -c "SELECT last_ddl_job()" 2>/dev/null | tail -n1)
    peak=$(peak_rss "$job")
    bench_writers_stop
    sql -c "SELECT 'chunks ' || chunks_done || ', catch-up passes ' || coalesce(catchup_passes, 0) ||
                   ', build ' || round(extract(epoch FROM finished_at - started_at), 1) || ' s'
              FROM pg_stat_background_ddl WHERE id = $job"
    echo "peak RssAnon of the worker: $peak kB"
    results+=("$rows $peak")
done

echo "== summary (rows, peak worker RssAnon in kB)"
printf '%s\n' "${results[@]}"
printf '%s\n' "${results[@]}" | awk 'NR == 1 { r1 = $1; m1 = $2 } END {
    if (NR > 1) printf "growth: %.1f kB per million rows; at 50M rows on that slope: %.0f MB\n",
        ($2 - m1) / (($1 - r1) / 1e6), (m1 + ($2 - m1) / (($1 - r1) / 1e6) * (50 - r1 / 1e6)) / 1024 }'
