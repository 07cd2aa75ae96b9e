#!/usr/bin/env bash
# bench/kinds.sh -- benchmark (not a test): background CREATE INDEX and REFRESH MATERIALIZED VIEW
# against their blocking statements, and the longest read stall during each.
#
# (As root, or on a running server without root: bench/lib.sh.)
# As root: installs/builds like scripts/demo, starts a throwaway cluster (default parallel query
# settings), fills `events` with ROWS rows (primary key on id) and builds the view `mv` (the
# demo's query, about half the rows, unique index on id).  Then, ROUNDS times each, in
# alternating order:
#   - index:   blocking CREATE INDEX CONCURRENTLY on events (payload)  vs  the background job;
#   - refresh: blocking REFRESH MATERIALIZED VIEW mv, blocking REFRESH ... CONCURRENTLY
#              vs  the background job.
# Around every build a reader (pgbench, READ_RATE lookups by primary key per second, of events
# for the index builds, of mv for the refreshes) logs every read; the longest read that ended
# during the build is its read stall (with -R, a read's latency counts from its scheduled start,
# so a reader queued behind a lock shows the whole wait).  Before each build the cache is warmed
# and a checkpoint taken.  Build time: psql \timing for the blocking statements, submitted_at to
# finished_at for background jobs.  Checks after each round that the index is valid and the view
# equals its query.
#
# Usage: bench/kinds.sh [ROWS]   (env ROWS, default 5000000; ROUNDS, default 3; READ_RATE, 200)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-5000000}}
ROUNDS=${ROUNDS:-3}
READ_RATE=${READ_RATE:-200}
QUERY="SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"
export PGPORT=${PGPORT:-54332}

bench_server "${BENCH_CONF[@]}"

echo "== loading $ROWS rows into events, building mv"
sql -q -c "CREATE EXTENSION background_ddl" \
    -c "CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL)" \
    -c "INSERT INTO events SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g" \
    -c "VACUUM ANALYZE events" \
    -c "CREATE MATERIALIZED VIEW mv AS $QUERY" \
    -c "CREATE UNIQUE INDEX mv_id ON mv (id)" \
    -c "VACUUM ANALYZE mv" \
    -c "CREATE TABLE bench_stop (x int)"

# The reader stops (its client errors out, and pgbench ends) once bench_stop has a row.
for rel in events mv; do
    cat >"$B/read_$rel.sql" <<EOS
\\set id random(1, $ROWS)
SELECT count(*) FROM $rel WHERE id = :id;
SELECT 1 / (1 - count(*))::int FROM bench_stop;
EOS
done

warm() { sql -q -c "SELECT count(*) FROM events" -c "SELECT count(*) FROM mv" -c "CHECKPOINT" >/dev/null; }

# measure OPERATION MODE: one build with the reader around it; prints "build_ms stall_ms reads"
measure() {
    local op=$1 mode=$2 rel=events t0 t1 ms
    [ "$op" = refresh ] && rel=mv
    warm
    rm -f "$B"/reads.*
    (cd "$B" && "$PGBIN/pgbench" -n -c 1 -R "$READ_RATE" -T 36000 -f "read_$rel.sql" -l --log-prefix=reads \
        >"$B/reader.out" 2>&1 || true) &
    local reader=$!
    sleep 1
    t0=$(date +%s%N)
    case "$op $mode" in
        "index blocking")
            ms=$(sql -c '\timing on' -c "CREATE INDEX CONCURRENTLY bench_idx ON events (payload)" | timing_ms) ;;
        "index background")
            ms=$(bench_background_ms "CREATE INDEX bench_idx ON events (payload)") ;;
        "refresh blocking")
            ms=$(sql -c '\timing on' -c "REFRESH MATERIALIZED VIEW mv" | timing_ms) ;;
        "refresh concurrently")
            ms=$(sql -c '\timing on' -c "REFRESH MATERIALIZED VIEW CONCURRENTLY mv" | timing_ms) ;;
        "refresh background")
            ms=$(bench_background_ms "REFRESH MATERIALIZED VIEW mv") ;;
    esac
    t1=$(date +%s%N)
    [ -n "$ms" ] || { echo "$op $mode failed" >&2; exit 1; }
    sleep 0.5
    sql -q -c "INSERT INTO bench_stop VALUES (1)"
    wait "$reader"
    sql -q -c "DELETE FROM bench_stop"
    # per-read log: client tx latency_us script epoch_s epoch_us (end of the read) [lag_us]
    cat "$B"/reads.* | awk -v t0="$t0" -v t1="$t1" -v ms="$ms" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 && end_ns <= t1 + 0.5e9) { n++; if ($3 > max) max = $3 } }
        END { printf "%s %.1f %d\n", ms, max / 1000, n }'
}

# check OPERATION: the index is valid (then dropped), or the view equals its query
check() {
    local valid diff
    if [ "$1" = index ]; then
        valid=$(sql -c "SELECT indisvalid FROM pg_index WHERE indexrelid = 'bench_idx'::regclass")
        [ "$valid" = t ] || { echo "bench_idx is not valid" >&2; exit 1; }
        sql -q -c "DROP INDEX bench_idx"
    else
        diff=$(sql -c "SELECT (SELECT count(*) FROM (TABLE mv EXCEPT ALL $QUERY) a)
                            + (SELECT count(*) FROM ($QUERY EXCEPT ALL TABLE mv) b)")
        [ "$diff" = 0 ] || { echo "mv differs from its query by $diff rows" >&2; exit 1; }
    fi
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    # Some changes, so that every refresh has new content to build.
    sql -q -c "UPDATE events SET payload = md5(payload) WHERE id % 100 = $round"
    if [ $((round % 2)) = 1 ]; then
        plan="index:blocking index:background refresh:blocking refresh:concurrently refresh:background"
    else
        plan="index:background index:blocking refresh:background refresh:concurrently refresh:blocking"
    fi
    for step in $plan; do
        op=${step%%:*}; mode=${step#*:}
        result=$(measure "$op" "$mode")
        read -r ms stall reads <<<"$result"
        check "$op"
        echo "$op $mode $ms $stall $reads" >>"$B/results"
        printf '== round %s: %-8s %-13s %10s ms   longest read %8s ms (%s reads)\n' \
            "$round" "$op" "$mode" "$ms" "$stall" "$reads"
    done
done

col() { awk -v o="$1" -v m="$2" -v c="$3" '$1 == o && $2 == m { print $c }' "$B/results" | median; }
colmax() { awk -v o="$1" -v m="$2" -v c="$3" '$1 == o && $2 == m && $c + 0 > x { x = $c + 0 } END { print x + 0 }' "$B/results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo
echo "events rows: $ROWS   mv rows: $(sql -c 'SELECT count(*) FROM mv')   rounds: $ROUNDS   reads/s: $READ_RATE"
echo "default parallel query: max_parallel_workers_per_gather = $(sql -c 'SHOW max_parallel_workers_per_gather'),"\
     "max_parallel_maintenance_workers = $(sql -c 'SHOW max_parallel_maintenance_workers')"
printf '%-38s %14s %14s %14s\n' "" "median ms" "ratio" "longest read ms"
bi=$(col index blocking 3); gi=$(col index background 3)
printf '%-38s %14s %14s %14s\n' "CREATE INDEX CONCURRENTLY (blocking)" "$bi" "1.00" "$(colmax index blocking 4)"
printf '%-38s %14s %14s %14s\n' "CREATE INDEX, background job" "$gi" "$(ratio "$gi" "$bi")" "$(colmax index background 4)"
br=$(col refresh blocking 3); cr=$(col refresh concurrently 3); gr=$(col refresh background 3)
printf '%-38s %14s %14s %14s\n' "REFRESH (blocking)" "$br" "1.00" "$(colmax refresh blocking 4)"
printf '%-38s %14s %14s %14s\n' "REFRESH CONCURRENTLY (blocking)" "$cr" "$(ratio "$cr" "$br")" "$(colmax refresh concurrently 4)"
printf '%-38s %14s %14s %14s\n' "REFRESH, background job" "$gr" "$(ratio "$gr" "$br")" "$(colmax refresh background 4)"
echo "OK: every index valid, the view equal to its query after every refresh"
