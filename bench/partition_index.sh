#!/usr/bin/env bash
# bench/partition_index.sh -- benchmark (not a test): CREATE INDEX on a partitioned table as one
# background job, against the blocking CREATE INDEX on the parent and against PostgreSQL's
# documented recipe run by a script (CREATE INDEX ... ON ONLY the parent, CREATE INDEX
# CONCURRENTLY on each partition, ALTER INDEX ... ATTACH PARTITION each); and a materialized
# view over the partitioned table, background (in chunks of its partitions) against blocking.
#
# (As root, or on a running server without root: bench/lib.sh.)
# As root: installs/builds like scripts/demo, starts a throwaway cluster (default parallel query
# settings), fills `events` (range-partitioned on `day`, PARTITIONS partitions) with ROWS rows.
# Then, ROUNDS times, in alternating order, each of the three index builds of
# events (account, payload), with writers running around it: pgbench at WRITE_RATE transactions
# per second (-R), each an UPDATE of a random row (by primary key, on a random partition) and an
# INSERT.  For each build: its time (psql \timing for the blocking statement and the recipe's
# whole script, submitted_at to finished_at for the job), the writes completed per second during
# it, and the longest write that ended during it (with -R a write's latency counts from its
# scheduled start, so a writer queued behind a lock shows the whole wait; it counts the writes
# that ended up to a second after the build, which a blocking build releases).  Checks after each
# build that the parent index is valid, with one valid index per partition.  Last, ROUNDS times
# in alternating order, two materialized views over the partitioned table, an aggregate and a
# projection of a tenth of the rows (blocking, with PostgreSQL's default parallel query, and
# background, no writers), each checked equal to its query.
#
# Usage: bench/partition_index.sh [ROWS]   (env ROWS, default 20000000; PARTITIONS, 20;
#        ROUNDS, 1; WRITE_RATE, 200; PARTS, "index view": the index builds, the views, or both)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-20000000}}
PARTITIONS=${PARTITIONS:-20}
ROUNDS=${ROUNDS:-1}
WRITE_RATE=${WRITE_RATE:-200}
PARTS=${PARTS:-index view}
AGGREGATE="SELECT day, account, count(*) AS n, sum(id) AS s FROM events GROUP BY day, account"
PROJECTION="SELECT id, day, upper(payload) AS p FROM events WHERE account % 10 = 3"
export PGPORT=${PGPORT:-54334}

bench_server "shared_buffers = 1GB" "max_wal_size = 8GB" "checkpoint_timeout = 30min" "autovacuum = off"

echo "== loading $ROWS rows into events ($PARTITIONS partitions)"
sql -q -c "CREATE EXTENSION background_ddl" \
    -c "CREATE TABLE events (id bigint NOT NULL, day int NOT NULL, account int NOT NULL,
                             payload text NOT NULL, PRIMARY KEY (id, day)) PARTITION BY RANGE (day)"
for p in $(seq 0 $((PARTITIONS - 1))); do
    sql -q -c "CREATE TABLE events_$p PARTITION OF events FOR VALUES FROM ($p) TO ($((p + 1)))"
done
sql -q -c "INSERT INTO events SELECT g, g % $PARTITIONS, g % 1000, md5(g::text)
             FROM generate_series(1, $ROWS) g" \
    -c "VACUUM ANALYZE events" \
    -c "CREATE TABLE bench_stop (x int)"

# The writer stops (its client errors out, and pgbench ends) once bench_stop has a row.
cat >"$B/write.sql" <<EOS
\\set id random(1, $ROWS)
\\set day :id % $PARTITIONS
\\set new random($ROWS + 1, 1000000000000)
UPDATE events SET payload = md5(payload) WHERE id = :id AND day = :day;
INSERT INTO events VALUES (:new, :new % $PARTITIONS, :new % 1000, 'new') ON CONFLICT DO NOTHING;
SELECT 1 / (1 - count(*))::int FROM bench_stop;
EOS

# The recipe of PostgreSQL's documentation, as a script
{
    echo "CREATE INDEX bench_idx ON ONLY events (account, payload);"
    for p in $(seq 0 $((PARTITIONS - 1))); do
        echo "CREATE INDEX CONCURRENTLY bench_idx_$p ON events_$p (account, payload);"
        echo "ALTER INDEX bench_idx ATTACH PARTITION bench_idx_$p;"
    done
} >"$B/recipe.sql"

timing_ms() { sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{ s += $1 } END { printf "%.1f\n", s }'; }
warm() { sql -q -c "SELECT count(*) FROM events" -c "CHECKPOINT" >/dev/null; }

# measure MODE: one index build with the writers around it; prints "build_ms writes_per_s longest_ms"
measure() {
    local mode=$1 t0 t1 ms
    warm
    rm -f "$B"/writes.*
    (cd "$B" && "$PGBIN/pgbench" -n -c 2 -j 2 -R "$WRITE_RATE" -T 72000 -f write.sql -l --log-prefix=writes \
        >"$B/writer.out" 2>&1 || true) &
    local writer=$!
    sleep 2
    t0=$(date +%s%N)
    case $mode in
        blocking)   ms=$(sql -c '\timing on' -c "CREATE INDEX bench_idx ON events (account, payload)" | timing_ms) ;;
        recipe)     ms=$(sql -c '\timing on' -f "$B/recipe.sql" | timing_ms) ;;
        background) ms=$(bench_background_ms "CREATE INDEX bench_idx ON events (account, payload)") ;;
    esac
    t1=$(date +%s%N)
    [ -n "$ms" ] || { echo "$mode failed" >&2; exit 1; }
    sleep 1
    sql -q -c "INSERT INTO bench_stop VALUES (1)"
    wait "$writer"
    sql -q -c "DELETE FROM bench_stop"
    # per-write log: client tx latency_us script epoch_s epoch_us (end of the write) [lag_us]
    # writes/s: the writes that ended during the build; longest: also those that ended in the
    # second after it (a write the build blocked ends just after it)
    cat "$B"/writes.* | awk -v t0="$t0" -v t1="$t1" -v ms="$ms" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 && end_ns <= t1) n++
          if (end_ns >= t0 && end_ns <= t1 + 1e9 && $3 > max) max = $3 }
        END { printf "%s %.1f %.1f\n", ms, n / ((t1 - t0) / 1e9), max / 1000 }'
}

# check: the parent index is valid and every partition has a valid index attached (then dropped)
check() {
    local ok
    ok=$(sql -c "SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'bench_idx'::regclass)
                    AND (SELECT count(*) FROM pg_partition_tree('bench_idx') t
                           JOIN pg_index i ON i.indexrelid = t.relid
                          WHERE t.isleaf AND i.indisvalid) = $PARTITIONS")
    [ "$ok" = t ] || { echo "bench_idx is not valid on every partition" >&2; exit 1; }
    sql -q -c "DROP INDEX bench_idx"
}

: >"$B/results"
for round in $(seq "$ROUNDS"); do
    [[ " $PARTS " == *" index "* ]] || break
    if [ $((round % 2)) = 1 ]; then plan="blocking recipe background"; else plan="background recipe blocking"; fi
    for mode in $plan; do
        read -r ms wps longest <<<"$(measure "$mode")"
        check
        echo "$mode $ms $wps $longest" >>"$B/results"
        printf '== round %s: %-11s %10s ms   writes/s %7s   longest write %9s ms\n' \
            "$round" "$mode" "$ms" "$wps" "$longest"
    done
done

# view NAME QUERY MODE: one materialized view, timed; checked equal to its query, then dropped
view() {
    local name=$1 query=$2 mode=$3 ms diff
    warm
    if [ "$mode" = blocking ]; then
        ms=$(sql -c '\timing on' -c "CREATE MATERIALIZED VIEW $name AS $query" | timing_ms)
    else
        ms=$(bench_background_ms "CREATE MATERIALIZED VIEW $name AS $query")
    fi
    diff=$(sql -c "SELECT (SELECT count(*) FROM (TABLE $name EXCEPT ALL $query) a)
                        + (SELECT count(*) FROM ($query EXCEPT ALL TABLE $name) b)")
    [ "$diff" = 0 ] || { echo "$name differs from its query by $diff rows" >&2; exit 1; }
    sql -q -c "DROP MATERIALIZED VIEW $name"
    echo "$ms"
}

for round in $(seq "$ROUNDS"); do
    [[ " $PARTS " == *" view "* ]] || break
    if [ $((round % 2)) = 1 ]; then plan="blocking background"; else plan="background blocking"; fi
    for mode in $plan; do
        for v in aggregate projection; do
            if [ $v = aggregate ]; then q=$AGGREGATE; else q=$PROJECTION; fi
            ms=$(view "mv_$v" "$q" "$mode")
            echo "view_${v}_$mode $ms" >>"$B/results"
            printf '== round %s: view %-10s %-11s %10s ms\n' "$round" "$v" "$mode" "$ms"
        done
    done
done
[[ " $PARTS " == *" view "* ]] && sql -c "SELECT strategy FROM pg_stat_background_ddl
                                             WHERE target = 'public.mv_aggregate' ORDER BY id DESC LIMIT 1"

col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$B/results" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo
echo "events rows: $ROWS   partitions: $PARTITIONS   rounds: $ROUNDS   writes/s asked: $WRITE_RATE"
echo "default parallel query: max_parallel_workers_per_gather = $(sql -c 'SHOW max_parallel_workers_per_gather'),"\
     "max_parallel_maintenance_workers = $(sql -c 'SHOW max_parallel_maintenance_workers')"
if [[ " $PARTS " == *" index "* ]]; then
    printf '%-44s %12s %16s %12s %16s\n' "" "median ms" "ratio to recipe" "writes/s" "longest write ms"
    rm_=$(col recipe 2)
    for mode in blocking recipe background; do
        case $mode in
            blocking) label="CREATE INDEX on the parent (blocking)" ;;
            recipe) label="the documented recipe, by a script" ;;
            background) label="CREATE INDEX, background job" ;;
        esac
        m=$(col "$mode" 2)
        printf '%-44s %12s %16s %12s %16s\n' "$label" "$m" "$(ratio "$m" "$rm_")" "$(col "$mode" 3)" "$(col "$mode" 4)"
    done
fi
if [[ " $PARTS " == *" view "* ]]; then
    printf '%-44s %12s %16s\n' "" "median ms" "ratio to blocking"
    for v in aggregate projection; do
        b=$(col "view_${v}_blocking" 2)
        j=$(col "view_${v}_background" 2)
        printf '%-44s %12s %16s\n' "CREATE MATERIALIZED VIEW ($v), blocking" "$b" "1.00"
        printf '%-44s %12s %16s\n' "CREATE MATERIALIZED VIEW ($v), background" "$j" "$(ratio "$j" "$b")"
    done
fi
echo "OK: every index valid on every partition, every view equal to its query"
