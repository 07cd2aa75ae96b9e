#!/usr/bin/env bash
# bench/session_overhead.sh -- benchmark (not a test): what the session-order check costs a
# statement that touches no job of its session.  pgbench's default script (TPC-B-like: three
# UPDATEs, a SELECT and an INSERT a transaction) runs with background_ddl off and on, ROUNDS
# times each in alternating order, DURATION seconds each; a third mode runs it on with a job of the
# session still unfinished on another table (each client submits one first, queued after a
# paused job: it holds no snapshot, which would slow the writes down by itself), so that every
# statement is checked against it.  Commits do not wait for the WAL flush (synchronous_commit
# off): its time would hide the CPU the checks take.  Prints the median tps of each and the
# ratios.
#
# Usage: bench/session_overhead.sh   (env SCALE, default 10; CLIENTS, default 2; DURATION,
#        default 20; ROUNDS, default 5; PROTOCOL, default simple)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-2}
SECONDS_EACH=${DURATION:-20}
ROUNDS=${ROUNDS:-5}
PROTOCOL=${PROTOCOL:-simple}
export PGPORT=${PGPORT:-54333}

bench_server "shared_buffers = 512MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" \
    "synchronous_commit = off" \
    "background_ddl.max_workers = 8"
sql -q -c "CREATE EXTENSION background_ddl"
echo "== pgbench -i -s $SCALE"
"$PGBIN/pgbench" -q -i -s "$SCALE" >"$B/init.log" 2>&1
# For the third mode: a job that never starts (paused), and each client's first transaction
# submits a job over "other" that starts after it: queued, holding no worker and no snapshot,
# so the session's later statements (the TPC-B ones, which touch nothing of it) are each
# checked against it.
sql -q -c "CREATE TABLE other AS SELECT g AS id FROM generate_series(1, 1000) g" \
    -c "SET background_ddl = on" -c "CREATE TABLE never AS SELECT id FROM other" \
    -c "SELECT pause_ddl(last_ddl_job())" >/dev/null
never=$(sql -c "SELECT max(id) FROM pg_stat_background_ddl")
cat >"$B/with_job.sql" <<EOS
\\if :client_started
\\else
SELECT submit_ddl(format('CREATE TABLE held_%s_%s AS SELECT id FROM other', :client_id, (random() * 1e9)::int),
                  after => ARRAY[$never]::bigint[]);
\\set client_started 1
\\endif
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
EOS

# run MODE: pgbench for SECONDS_EACH; prints its tps
run() {
    local mode=$1 options="" script=(-b tpcb-like)
    case $mode in
        on) options="-c background_ddl=on" ;;
        on_with_job) script=(-f "$B/with_job.sql" -D client_started=0) ;;
    esac
    PGOPTIONS="$options" "$PGBIN/pgbench" -n -M "$PROTOCOL" -c "$CLIENTS" -j "$CLIENTS" \
        -T "$SECONDS_EACH" "${script[@]}" >"$B/run_$mode.out" 2>&1 || { cat "$B/run_$mode.out" >&2; exit 1; }
    sed -nE 's/^tps = ([0-9.]+) .*/\1/p' "$B/run_$mode.out" | tail -n1
}

echo "== a warm-up run (not counted)"
run off >/dev/null
: >"$B/results"
for round in $(seq "$ROUNDS"); do
    case $((round % 3)) in
        1) order="off on on_with_job" ;;
        2) order="on on_with_job off" ;;
        0) order="on_with_job off on" ;;
    esac
    for mode in $order; do
        tps=$(run "$mode")
        echo "round $round $mode: $tps tps"
        echo "$mode $tps" >>"$B/results"
    done
done

tps_of() { awk -v m="$1" '$1 == m { print $2 }' "$B/results"; }
off=$(tps_of off | median)
echo
echo "pgbench tpcb-like, scale $SCALE, $CLIENTS clients, $PROTOCOL protocol, $ROUNDS rounds of ${SECONDS_EACH}s, medians"
echo "(the spread of the rounds shows the machine's noise):"
printf "%-40s %10s %8s   %s\n" "" "tps" "ratio" "rounds' range"
for mode in off on on_with_job; do
    case $mode in
        off) label="background_ddl off" ;;
        on) label="background_ddl on, no job" ;;
        on_with_job) label="on, a job of the session unfinished" ;;
    esac
    tps=$(tps_of $mode | median)
    printf "%-40s %10.0f %8.3f   %s\n" "$label" "$tps" "$(awk -v a="$tps" -v b="$off" 'BEGIN { print a / b }')" \
        "$(tps_of $mode | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f to %.0f", lo, hi }')"
done
