#!/usr/bin/env bash
# bench/reindex.sh -- benchmark (not a test): REINDEX TABLE three ways, side by side in one run:
# the blocking REINDEX TABLE, REINDEX TABLE CONCURRENTLY, and the background job (background_ddl
# = on), on `events` (ROWS rows; its primary key, an index on an int and one on a text column),
# ROUNDS rounds in rotating order, with CLIENTS pgbench writers (each transaction updates a random
# row and inserts one; 0: none) around every rebuild.  Per rebuild: its time (psql \timing for the
# session's statements, submitted_at to finished_at for the job) and the longest write that ended
# during it.  A checkpoint before each; every index checked valid after it.
#
# Usage: bench/reindex.sh [ROWS]   (env ROWS, default 5000000; ROUNDS, default 3; CLIENTS, 4)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-5000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
export PGPORT=${PGPORT:-54336}

bench_server "${BENCH_CONF[@]}"
bench_writes_setup "$ROWS"
sql -q -c "CREATE INDEX events_account ON events (account)" -c "CREATE INDEX events_payload ON events (payload)"
bench_stoppable_writes

# measure METHOD: one rebuild with the writers around it; prints "ms longest_write_ms"
measure() {
    local method=$1 t0 t1 ms max
    sql -q -c "CHECKPOINT"
    bench_logged_writers_start "$CLIENTS"
    t0=$(date +%s%N)
    case $method in
        blocking) ms=$(sql -c '\timing on' -c "REINDEX TABLE events" | timing_ms) ;;
        concurrently) ms=$(sql -c '\timing on' -c "REINDEX TABLE CONCURRENTLY events" | timing_ms) ;;
        job) ms=$(bench_background_ms "REINDEX TABLE events") ;;
    esac
    t1=$(date +%s%N)
    bench_logged_writers_stop "$t0" "$t1"
    max=$BENCH_LONGEST_WRITE
    [ "$(sql -c "SELECT bool_and(indisvalid) AND count(*) = 3 FROM pg_index WHERE indrelid = 'events'::regclass")" = t ] ||
        { echo "after $method, the indexes of events are not three valid ones" >&2; exit 1; }
    echo "$ms $max"
}

methods=(blocking concurrently job)
: >"$B/results"
for round in $(seq "$ROUNDS"); do
    for i in 0 1 2; do
        method=${methods[$(((round + i) % 3))]}
        read -r ms max <<<"$(measure "$method")"
        echo "$method $ms $max" >>"$B/results"
        echo "== round $round: $method $ms ms, longest write $max ms"
    done
done

echo
echo "events rows: $ROWS (3 indexes)   rounds: $ROUNDS   writer clients: $CLIENTS"
printf '%-34s %12s %12s %8s\n' "" "median ms" "ratio" "longest write ms"
for method in blocking concurrently job; do
    printf '%-34s %12s %12s %8s\n' "$method" "$(bench_col "$method" 2)" \
        "$(awk -v a="$(bench_col "$method" 2)" -v b="$(bench_col concurrently 2)" 'BEGIN { printf "%.2f", a / b }')" \
        "$(bench_colmax "$method" 3)"
done
