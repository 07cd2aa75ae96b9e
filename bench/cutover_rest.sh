#!/usr/bin/env bash
# bench/cutover_rest.sh -- benchmark (not a test): the cut-over of a join view that has many changed
# rows left to recompute.  A view `events JOIN accounts` (ROWS rows of events, 1,000 accounts, each
# joined by ROWS/1,000 rows) is built as a job whose worker is held before its cut-over (the hold
# point "cutting over", background_ddl.test_hold_point); KEYS accounts are then changed, which
# changes KEYS * ROWS/1,000 rows of the view, and the worker let go: its cut-over recomputes them in
# its one transaction.  Reported per round: the blocking CREATE MATERIALIZED VIEW's time (the whole
# query, for scale), the cut-over's (from the release to the job's end: the time the job holds its
# cut-over snapshot), and their ratio; medians over ROUNDS rounds.
#
# Usage: bench/cutover_rest.sh [ROWS] [KEYS]   (defaults 8000000 and 40; env ROUNDS, default 3)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-8000000}
KEYS=${2:-40}
ROUNDS=${ROUNDS:-3}
JOIN="SELECT e.id, e.account, a.name, e.amount FROM events e JOIN accounts a ON a.id = e.account"

bench_server "${BENCH_CONF[@]}"
sql -q -c "CREATE EXTENSION background_ddl"
echo "== loading $ROWS rows into events"
sql -q -c "CREATE TABLE accounts (id int PRIMARY KEY, name text NOT NULL)" \
    -c "INSERT INTO accounts SELECT g, md5(g::text) FROM generate_series(0, 999) g" \
    -c "CREATE TABLE events (id bigint PRIMARY KEY, account int NOT NULL, amount int NOT NULL,
                             payload text NOT NULL) WITH (fillfactor = 90)" \
    -c "INSERT INTO events SELECT g, g % 1000, g % 97, md5(g::text) FROM generate_series(1, $ROWS) g" \
    -c "CREATE INDEX ON events (account)" -c "VACUUM ANALYZE events, accounts" -c "CHECKPOINT"

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    t0=$(date +%s%N)
    sql -q -c "CREATE MATERIALIZED VIEW blocking_$round AS $JOIN"
    blocking=$(( ($(date +%s%N) - t0) / 1000000 ))
    sql -q -c "DROP MATERIALIZED VIEW blocking_$round" -c "CHECKPOINT"

    sql -q -c "ALTER SYSTEM SET background_ddl.test_hold_point = 'cutting over'" -c "SELECT pg_reload_conf()" >/dev/null
    coproc HOLD { sql -q; }
    echo "SELECT pg_advisory_lock(4242);" >&"${HOLD[1]}"
    job=$(sql -c "SET background_ddl = on" -c "CREATE MATERIALIZED VIEW job_$round AS $JOIN" \
              -c "SELECT last_ddl_job()" | tail -n1)
    for _ in $(seq 1200); do
        [ "$(sql -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242
                      AND NOT granted")" = 1 ] && break
        sleep 0.1
    done
    sql -q -c "UPDATE accounts SET name = name || 'x' WHERE id < $KEYS" \
        -c "ALTER SYSTEM RESET background_ddl.test_hold_point" -c "SELECT pg_reload_conf()" >/dev/null
    t0=$(date +%s%N)
    echo "SELECT pg_advisory_unlock(4242);" >&"${HOLD[1]}"
    sql -q -c "CALL await_ddl($job, '1 hour')" 2>/dev/null || true
    cutover=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "\\q" >&"${HOLD[1]}"
    wait "$HOLD_PID" 2>/dev/null || true
    state=$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")
    [ "$state" = succeeded ] || { echo "job $job $state" >&2; exit 1; }
    [ "$(sql -c "SELECT count(*) FROM (TABLE job_$round EXCEPT $JOIN) d")" = 0 ] ||
        { echo "job $job: the view differs from its query" >&2; exit 1; }
    sql -q -c "DROP MATERIALIZED VIEW job_$round"
    echo "$blocking $cutover" >>"$B/results"
    echo "== round $round: blocking build $blocking ms; the job's cut-over of $((KEYS * ROWS / 1000)) changed rows $cutover ms"
done

b=$(awk '{ print $1 }' "$B/results" | median)
c=$(awk '{ print $2 }' "$B/results" | median)
echo
echo "rows $ROWS, changed before the cut-over $((KEYS * ROWS / 1000)), medians of $ROUNDS rounds"
echo "blocking build ms: $b"
echo "job's cut-over ms: $c"
echo "ratio cut-over/blocking build: $(awk -v a="$c" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
