#!/usr/bin/env bash
# bench/group_publish.sh -- benchmark (not a test): what publishing jobs together costs.  The
# same five statements (a CHECK constraint on events, a materialized view over events, a CREATE
# TABLE AS of half its rows, a REFRESH of a per-account view, a unique index on events) are submitted
# in one transaction, ROUNDS times each way in alternating order: as a group
# (background_ddl.cutover_group: one transaction publishes all five) and as five jobs published
# each at its own cut-over, while CLIENTS pgbench clients update and insert rows of events.  The
# constraint comes first (without a group, a constraint added to a table after a job that reads
# it starts after that job); it and the index are dropped after each round.  It reports,
# as medians over the rounds: the time from the submit until all five have succeeded, the
# longest single write during it, and for the group the publication's own transaction (from the
# publisher's log line, on a throwaway cluster).  (Before 2026-12-06 it had the first three
# statements only.)
#
# Usage: bench/group_publish.sh [ROWS]   (env ROWS, default 1000000; ROUNDS, default 3; CLIENTS,
#        default 2, 0 for none; EXTRA_CONF, more postgresql.conf lines)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-1000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-2}
export PGPORT=${PGPORT:-54332}

mapfile -t extra_conf <<<"${EXTRA_CONF:-}"
bench_server "${BENCH_CONF[@]}" "${extra_conf[@]}"
bench_writes_setup "$ROWS"
bench_stoppable_writes
sql -q -c "CREATE MATERIALIZED VIEW per_account AS SELECT account, count(*) AS n FROM events GROUP BY account"

# measure MODE ROUND: the five jobs, grouped or not; print "total_ms longest_write_ms publish_ms"
measure() {
    local mode=$1 round=$2 group_line='' t0 t1 last publish_ms='-'
    [ "$mode" = group ] && group_line="SET LOCAL background_ddl.cutover_group = 'round_$round';"
    bench_logged_writers_start "$CLIENTS"
    t0=$(date +%s%N)
    sql -q -c "SET background_ddl = on" -c "SET client_min_messages = warning" -c "BEGIN" \
        -c "$group_line SELECT 1" \
        -c "ALTER TABLE events ADD CONSTRAINT events_account_${mode}_$round CHECK (account >= 0)" \
        -c "CREATE MATERIALIZED VIEW mv_${mode}_$round AS SELECT id, account, payload FROM events WHERE account % 3 = 0" \
        -c "CREATE TABLE half_${mode}_$round AS SELECT id, account FROM events WHERE id % 2 = 0" \
        -c "REFRESH MATERIALIZED VIEW per_account" \
        -c "CREATE UNIQUE INDEX events_id_${mode}_$round ON events (id, account)" \
        -c "COMMIT" >/dev/null || return 1
    last=$(sql -c "SELECT max(id) FROM pg_stat_background_ddl")
    for job in $(seq $((last - 4)) "$last"); do
        sql -q -c "CALL await_ddl($job, '2 hours')" >/dev/null
        [ "$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")" = succeeded ] ||
            { echo "job $job did not succeed" >&2; exit 1; }
    done
    t1=$(date +%s%N)
    bench_logged_writers_stop "$t0" "$t1"
    sql -q -c "DROP INDEX events_id_${mode}_$round" \
        -c "ALTER TABLE events DROP CONSTRAINT events_account_${mode}_$round" >/dev/null
    if [ "$mode" = group ] && [ -f "$B/server.log" ]; then
        publish_ms=$(sed -nE "s/.*published its group \"round_$round\": .*, in ([0-9.]+) ms.*/\1/p" "$B/server.log")
    fi
    echo "$(( (t1 - t0) / 1000000 )) $BENCH_LONGEST_WRITE ${publish_ms:--}"
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then order="group separate"; else order="separate group"; fi
    for mode in $order; do
        read -r total longest publish <<<"$(measure "$mode" "$round")"
        [ -n "$total" ] || { echo "round $round: $mode failed" >&2; exit 1; }
        echo "$mode $total $longest $publish" >>"$B/results"
        echo "== round $round: $mode: all five succeeded in $total ms; longest write $longest ms; publication $publish ms"
    done
done

echo
echo "== medians over $ROUNDS rounds, $ROWS rows, $CLIENTS writers"
printf '%-9s %10s %16s %16s\n' mode total_ms longest_write_ms publication_ms
for mode in separate group; do
    printf '%-9s %10s %16s %16s\n' "$mode" "$(bench_col "$mode" 2)" "$(bench_col "$mode" 3)" \
        "$( [ "$mode" = group ] && bench_col group 4 || echo -)"
done
