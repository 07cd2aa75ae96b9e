#!/usr/bin/env bash
# bench/writer_overhead.sh -- benchmark (not a test): what a build costs the writers of its base
# table.  pgbench updates and inserts rows of `events` (4 clients, full speed) while the same
# materialized view is built, blocking and as a background job (whose capture trigger logs every
# changed row), ROUNDS times each in alternating order.  From pgbench's per-transaction log it
# reports, as medians over the rounds: the writers' throughput in the 2.5 s before each build and
# during it, the ratio background/blocking of the latter, and the longest single write during
# the builds (the worst stall; the background job's trigger install and drop wait at most
# background_ddl.lock_timeout for their locks).
#
# Usage: bench/writer_overhead.sh [ROWS]   (env ROWS, default 5000000; ROUNDS, default 3; QUERY;
#        CLIENTS, default 4; EXTRA_CONF, more postgresql.conf lines)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-5000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
QUERY=${QUERY:-"SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"}
export PGPORT=${PGPORT:-54331}

# EXTRA_CONF: more postgresql.conf lines, one per line (e.g. "background_ddl.max_workers_per_job = 1")
mapfile -t extra_conf <<<"${EXTRA_CONF:-}"
bench_server "${BENCH_CONF[@]}" "${extra_conf[@]}"

bench_writes_setup "$ROWS"

# measure MODE ROUND: run pgbench around one build; print
# "tps_before tps_during max_latency_ms build_ms"
measure() {
    local mode=$1 round=$2 t0 t1
    rm -f "$B"/pgbench_log_"$mode".*
    (cd "$B" && "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T 30 -f writes.sql -l --log-prefix="pgbench_log_$mode" \
        >"$B/pgbench_$mode.out" 2>&1) &
    local writer=$!
    sleep 3
    t0=$(date +%s%N)
    if [ "$mode" = blocking ]; then
        sql -q -c "CREATE MATERIALIZED VIEW mv_${mode}_$round AS $QUERY"
    else
        bench_background "CREATE MATERIALIZED VIEW mv_${mode}_$round AS $QUERY" >/dev/null || exit 1
    fi
    t1=$(date +%s%N)
    wait "$writer"
    # per-transaction log: client tx latency_us script epoch_s epoch_us (end of the transaction)
    cat "$B"/pgbench_log_"$mode".* | awk -v t0="$t0" -v t1="$t1" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 - 2.5e9 && end_ns < t0) before++
          if (end_ns >= t0 && end_ns <= t1) { during++; if ($3 > max) max = $3 } }
        END { printf "%.0f %.0f %.1f %.0f\n", before / 2.5, during / ((t1 - t0) / 1e9), max / 1000, (t1 - t0) / 1e6 }'
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then order="blocking background"; else order="background blocking"; fi
    for mode in $order; do
        read -r before during max ms <<<"$(measure "$mode" "$round")"
        echo "$mode $before $during $max $ms" >>"$B/results"
        echo "== round $round: $mode build $ms ms; writers $before tx/s before, $during tx/s during; longest write $max ms"
    done
done

echo
echo "events rows: $ROWS   rounds: $ROUNDS   writer clients: $CLIENTS"
printf '%-40s %12s %12s\n' "" blocking background
printf '%-40s %12s %12s\n' "median build time (ms)" "$(bench_col blocking 5)" "$(bench_col background 5)"
printf '%-40s %12s %12s\n' "median writer tx/s before the build" "$(bench_col blocking 2)" "$(bench_col background 2)"
printf '%-40s %12s %12s\n' "median writer tx/s during the build" "$(bench_col blocking 3)" "$(bench_col background 3)"
printf '%-40s %12s %12s\n' "longest write during a build (ms)" "$(bench_colmax blocking 4)" "$(bench_colmax background 4)"
printf '%-40s %12s\n' "throughput ratio background/blocking" \
    "$(awk -v a="$(bench_col background 3)" -v b="$(bench_col blocking 3)" 'BEGIN { printf "%.2f", a / b }')"
