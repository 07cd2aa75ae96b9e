#!/usr/bin/env bash
# bench/rewrite.sh -- benchmark (not a test): a table's rewrite three ways, side by side in one run,
# with writers running: the blocking VACUUM FULL, pg_repack (postgresql-15-repack, installed if
# missing), and the background job (background_ddl = on), on `events` (ROWS rows, a quarter of them
# deleted first and after each rewrite so that each has the same dead rows to drop; its primary key
# and an index on an int column), ROUNDS rounds in rotating order, with CLIENTS pgbench writers
# (each transaction updates a random row and inserts one) around every rewrite and around a
# stretch of as long without one.  Per rewrite: its time (psql \timing; pg_repack's run; submitted
# to finished for the job), the longest write that ended during it, the WAL it wrote (the server's
# WAL position before and after, the writers' included), and the writers' transactions per second
# during it over theirs without a rewrite in the same round.  A checkpoint before each; the
# indexes checked valid and the rows counted after it.
#
# With STATEMENT=alter, the rewrite is ALTER TABLE events ALTER COLUMN account TYPE bigint (its
# index made again for bigint), two ways: blocking and the job (pg_repack cannot change a type); the
# column is made int again after each, blocking, outside the measure.  With STATEMENT=add, it is
# ALTER TABLE events ADD COLUMN token uuid NOT NULL DEFAULT gen_random_uuid() (a volatile default:
# PostgreSQL rewrites the table), the same two ways; the column is dropped after each. With
# STATEMENT=cluster, it is CLUSTER events USING events_account (the rows in the order of an
# int column of 1,000 values, which their order of insertion scatters over the whole table),
# three ways: pg_repack orders by the same column (--order-by=account); after each, the rows
# that follow a row of a greater account in the table's physical order are counted (reported
# with the time: the rows written during a background rewrite end up after the others).
#
# With PARTITIONS=N (alter and add only), events is partitioned by hash of id into N partitions:
# the statement on the partitioned table, blocking, or as a job for each partition published
# together.
#
# With ACCOUNTS=N, account has N values rather than 1,000 (ACCOUNTS=4 with STATEMENT=cluster: keys
# of many rows, whose chunks end inside a key); with BATCH_TIME, the jobs' background_ddl.batch_time
# (smaller batches: more chunks).
#
# Usage: bench/rewrite.sh [ROWS]   (env ROWS, default 10000000; ROUNDS, default 3; CLIENTS, 4;
#        STATEMENT, vacuum, alter, add or cluster; PARTITIONS, default none; ACCOUNTS, 1000;
#        BATCH_TIME, the server's)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-10000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
STATEMENT=${STATEMENT:-vacuum}
case $STATEMENT in
    vacuum) REWRITE="VACUUM FULL events"; methods=(blocking pg_repack job) ;;
    alter) REWRITE="ALTER TABLE events ALTER COLUMN account TYPE bigint"; methods=(blocking job) ;;
    add) REWRITE="ALTER TABLE events ADD COLUMN token uuid NOT NULL DEFAULT gen_random_uuid()"
         methods=(blocking job) ;;
    cluster) REWRITE="CLUSTER events USING events_account"; methods=(blocking pg_repack job) ;;
    *) echo "STATEMENT is vacuum, alter, add or cluster" >&2; exit 1 ;;
esac
PARTITIONS=${PARTITIONS:-0}
if [ "$PARTITIONS" -gt 0 ] && [ "$STATEMENT" != alter ] && [ "$STATEMENT" != add ]; then
    echo "PARTITIONS goes with STATEMENT=alter or add" >&2; exit 1
fi
export PGPORT=${PGPORT:-54337}
REPACK_ORDER=(--no-order)
[ "$STATEMENT" = cluster ] && REPACK_ORDER=(--order-by=account)

if ! dpkg -s postgresql-$PG_MAJOR-repack >/dev/null 2>&1; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-$PG_MAJOR-repack
fi
bench_server "${BENCH_CONF[@]}" ${BATCH_TIME:+"background_ddl.batch_time = '$BATCH_TIME'"}
bench_writes_setup "$ROWS" "$PARTITIONS"
sql -q -c "CREATE EXTENSION pg_repack" -c "CREATE INDEX events_account ON events (account)"
bench_stoppable_writes

# The same dead rows before each rewrite: a quarter of the rows deleted (inserted again first)
bloat() {
    sql -q -c "INSERT INTO events (id, account, payload)
                 SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g
                  WHERE g % 4 = 0 ON CONFLICT DO NOTHING" \
        -c "DELETE FROM events WHERE id % 4 = 0 AND id <= $ROWS" -c "VACUUM ANALYZE events"
}

wal_lsn() { sql -c "SELECT pg_current_wal_lsn()"; }

# The writers' transactions that ended between T0_NS and T1_NS (date +%s%N), per second
writer_rate() {
    cat "$B"/pgbench_log.* 2>/dev/null | awk -v t0="$1" -v t1="$2" '
        { end_ns = ($5 * 1000000 + $6) * 1000; if (end_ns >= t0 && end_ns <= t1) n++ }
        END { printf "%.1f", n / ((t1 - t0) / 1e9) }'
}

# measure METHOD: one rewrite with the writers around it, then as long without one; prints
# "ms longest_write_ms wal_mb rate_ratio"
measure() {
    local method=$1 t0 t1 t2 ms max lsn0 lsn1 wal rate_during rate_without
    # (each CLUSTER starts from the rows in the order of their ids, which scatters the accounts)
    [ "$STATEMENT" = cluster ] && sql -q -c "CLUSTER events USING events_pkey"
    bloat
    sql -q -c "CHECKPOINT"
    bench_logged_writers_start "$CLIENTS"
    lsn0=$(wal_lsn)
    t0=$(date +%s%N)
    case $method in
        blocking) ms=$(sql -c '\timing on' -c "$REWRITE" | timing_ms) ;;
        pg_repack)
            "$PGBIN/pg_repack" "${REPACK_ORDER[@]}" --table=events --no-superuser-check -h "$PGHOST" -p "$PGPORT" \
                -U postgres -d "${PGDATABASE:-postgres}" >"$B/pg_repack.out" 2>&1 ||
                { cat "$B/pg_repack.out" >&2; exit 1; }
            ms=$(( ($(date +%s%N) - t0) / 1000000 )) ;;
        job) ms=$(bench_background_ms "$REWRITE") ;;
    esac
    t1=$(date +%s%N)
    lsn1=$(wal_lsn)
    sleep "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')"
    t2=$(date +%s%N)
    bench_logged_writers_stop "$t0" "$t1"
    max=$BENCH_LONGEST_WRITE
    rate_during=$(writer_rate "$t0" "$t1")
    rate_without=$(writer_rate "$t1" "$t2")
    wal=$(sql -c "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / 1048576.0)")
    [ "$(sql -c "SELECT bool_and(indisvalid) AND count(*) = 2 FROM pg_index WHERE indrelid = 'events'::regclass")" = t ] ||
        { echo "after $method, the indexes of events are not two valid ones" >&2; exit 1; }
    if [ "$STATEMENT" = alter ]; then
        [ "$(sql -c "SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'account'")" = bigint ] ||
            { echo "after $method, events.account is not bigint" >&2; exit 1; }
        sql -q -c "ALTER TABLE events ALTER COLUMN account TYPE int"
    fi
    if [ "$STATEMENT" = cluster ]; then
        echo "after $method: $(sql -c "SELECT count(*) FROM (SELECT account, lag(account) OVER (ORDER BY ctid) AS before FROM events) s WHERE account < before") rows out of the account order" >&2
    fi
    if [ "$STATEMENT" = add ]; then
        [ "$(sql -c "SELECT count(*) = count(DISTINCT token) FROM events")" = t ] ||
            { echo "after $method, events.token is not a uuid of its own in each row" >&2; exit 1; }
        sql -q -c "ALTER TABLE events DROP COLUMN token"
    fi
    echo "$ms $max $wal $(awk -v a="$rate_during" -v b="$rate_without" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    for i in $(seq 0 $((${#methods[@]} - 1))); do
        method=${methods[$(((round + i) % ${#methods[@]}))]}
        read -r ms max wal rate <<<"$(measure "$method")"
        echo "$method $ms $max $wal $rate" >>"$B/results"
        echo "== round $round: $method $ms ms, longest write $max ms, WAL $wal MB, writers' rate $rate of theirs without"
    done
done

echo
tree=""
[ "$PARTITIONS" -gt 0 ] && tree="; $PARTITIONS hash partitions"
echo "$REWRITE; events rows: $ROWS (a quarter dead before each rewrite; 2 indexes$tree)   rounds: $ROUNDS   writer clients: $CLIENTS"
printf '%-12s %12s %8s %18s %8s %16s\n' "" "median ms" "ratio" "longest write ms" "WAL MB" "writers' rate"
for method in "${methods[@]}"; do
    printf '%-12s %12s %8s %18s %8s %16s\n' "$method" "$(bench_col "$method" 2)" \
        "$(awk -v a="$(bench_col "$method" 2)" -v b="$(bench_col blocking 2)" 'BEGIN { printf "%.2f", a / b }')" \
        "$(bench_colmax "$method" 3)" "$(bench_col "$method" 4)" "$(bench_col "$method" 5)"
done
