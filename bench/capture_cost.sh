#!/usr/bin/env bash
# bench/capture_cost.sh -- benchmark (not a test): what a job's capture trigger alone costs the
# writers of its table, without a build competing with them for the CPU.  pgbench updates and
# inserts rows of `events` (CLIENTS clients, full speed, WRITE_SECONDS seconds) with no job, then while a
# materialized view job over `events` is kept in its backfill by max_rate => 1 (alter_ddl: one row
# a second, so its capture trigger is in place and its worker hardly runs), ROUNDS times in turn;
# the table is vacuumed before each run.  Prints the median transactions per second each way and
# their ratio, and per round how many marks the capture logged for how many transactions.
#
# Usage: bench/capture_cost.sh [ROWS]   (env ROWS, default 1000000; ROUNDS, default 3; WRITE_SECONDS,
#        default 10; CLIENTS, default 4)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-1000000}}
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${WRITE_SECONDS:-10}
CLIENTS=${CLIENTS:-4}
QUERY="SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"
export PGPORT=${PGPORT:-54333}

bench_server "${BENCH_CONF[@]}"
bench_writes_setup "$ROWS"

# writes MODE: one pgbench run after a vacuum; appends "MODE tps" to $B/results
writes() {
    sql -q -c "VACUUM events" -c "CHECKPOINT"
    (cd "$B" && "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$SECONDS_EACH" -f writes.sql) >"$B/pgbench_$1.out" 2>&1
    echo "$1 $(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$B/pgbench_$1.out")" >>"$B/results"
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    writes none
    job=$(sql -c "SET background_ddl = on" -c "CREATE MATERIALIZED VIEW mv_$round AS $QUERY" \
              -c "SELECT last_ddl_job()" | tail -n1)
    sql -q -c "SELECT alter_ddl($job, max_rate => 1)" >/dev/null
    deadline=$(( $(date +%s) + 60 ))
    until [ "$(sql -c "SELECT phase FROM pg_stat_background_ddl WHERE id = $job")" = backfilling ]; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "job $job did not reach its backfill" >&2; exit 1; }
        sleep 0.2
    done
    marks_before=$(sql -c "SELECT count(*) FROM background_ddl.dirty WHERE job_id = $job")
    writes capture
    marks=$(( $(sql -c "SELECT count(*) FROM background_ddl.dirty WHERE job_id = $job") - marks_before ))
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$B/pgbench_capture.out")
    echo "== round $round: no job $(tail -n2 "$B/results" | head -n1 | cut -d' ' -f2) tx/s," \
         "capture $(tail -n1 "$B/results" | cut -d' ' -f2) tx/s ($marks marks for $tx transactions)"
    sql -q -c "SELECT cancel_ddl($job)" >/dev/null
    sql -q -c "CALL await_ddl($job, '1 minute')" 2>/dev/null || true
done

none=$(bench_col none 2)
capture=$(bench_col capture 2)
echo
echo "events rows: $ROWS   rounds: $ROUNDS   writer clients: $CLIENTS   seconds each: $SECONDS_EACH"
printf '%-40s %12s\n' "median writer tx/s, no job" "$none" "median writer tx/s, capture in place" "$capture"
printf '%-40s %12s\n' "ratio capture/none" "$(awk -v a="$capture" -v b="$none" 'BEGIN { printf "%.2f", a / b }')"
