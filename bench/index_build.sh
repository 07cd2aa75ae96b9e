#!/usr/bin/env bash
# bench/index_build.sh -- benchmark (not a test): the three ways to build a btree index on a big
# table, side by side in one run: the blocking CREATE INDEX, CREATE INDEX CONCURRENTLY, and the
# background job (background_ddl = on).  On `events` (ROWS rows, primary key on id), an index on
# an int column (account) and on a text column (payload), each without writers and with CLIENTS
# pgbench writers (each transaction updates a random row and inserts one); ROUNDS rounds, the
# three builds of a round in rotating order.  Per build:
#   - its time: psql \timing for the session's statements, submitted_at to finished_at for the
#     job;
#   - the longest write that ended during it (pgbench's per-transaction log; a writer queued
#     behind the blocking build's SHARE lock shows the whole wait);
#   - with writers, how far the build held the VACUUM horizon back: the largest age (in
#     transactions) of its processes' xmin, sampled every 20 ms (bench_snapshot_start);
#   - the WAL written meanwhile (without writers only: with them it is mostly theirs).
# Each index is checked valid, then dropped; a checkpoint before every build.
#
# Usage: bench/index_build.sh [ROWS]   (env ROWS, default 5000000; ROUNDS, default 3; CLIENTS,
#        default 4; JOB_SETTINGS, SQL run before the job's statement in its session, e.g.
#        'SET background_ddl.chunked_index_build = on;')
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-5000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
export PGPORT=${PGPORT:-54335}

bench_server "${BENCH_CONF[@]}"
bench_writes_setup "$ROWS"
bench_stoppable_writes

# build METHOD COLUMN NAME: one build; prints its time in ms
build() {
    local method=$1 column=$2 name=$3
    case $method in
        create) PGAPPNAME=bench_build sql -c '\timing on' -c "CREATE INDEX $name ON events ($column)" | timing_ms ;;
        cic) PGAPPNAME=bench_build sql -c '\timing on' -c "CREATE INDEX CONCURRENTLY $name ON events ($column)" | timing_ms ;;
        job) bench_background_ms "${JOB_SETTINGS:-}CREATE INDEX $name ON events ($column)" ;;
    esac
}

# measure METHOD COLUMN CLIENTS: one build, with CLIENTS writers around it (0: none); prints
# "build_ms longest_write_ms xmin_age wal_mb"
measure() {
    local method=$1 column=$2 clients=$3 name=idx_$1 t0 t1 ms lsn0 wal max
    sql -q -c "CHECKPOINT"
    bench_logged_writers_start "$clients"
    lsn0=$(sql -c "SELECT pg_current_wal_insert_lsn()")
    bench_snapshot_start "$B/snapshots" 0.02 "age(backend_xmin)"
    t0=$(date +%s%N)
    ms=$(build "$method" "$column" "$name")
    t1=$(date +%s%N)
    bench_snapshot_stop "$B/snapshots"
    wal=$(sql -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0') / 1048576.0)")
    bench_logged_writers_stop "$t0" "$t1"
    max=$BENCH_LONGEST_WRITE
    [ "$clients" = 0 ] || wal=-
    [ "$(sql -c "SELECT indisvalid FROM pg_index WHERE indexrelid = '$name'::regclass")" = t ] ||
        { echo "index $name ($method) is not valid" >&2; exit 1; }
    sql -q -c "DROP INDEX $name"
    echo "$ms $max $BENCH_SNAPSHOT_HELD $wal"
}

methods=(create cic job)
: >"$B/results"
for round in $(seq "$ROUNDS"); do
    for column in account payload; do
        for clients in 0 "$CLIENTS"; do
            for i in 0 1 2; do
                method=${methods[$(((round + i) % 3))]}
                read -r ms max held wal <<<"$(measure "$method" "$column" "$clients")"
                echo "$method/$column/$clients $ms $max $held $wal" >>"$B/results"
                echo "== round $round, $column, $clients writers: $method $ms ms, longest write $max ms, xmin age $held, WAL $wal MB"
            done
        done
    done
done

echo
echo "events rows: $ROWS   rounds: $ROUNDS   medians (longest write and xmin age: the largest)"
printf '%-9s %-8s %-10s %10s %10s %10s %9s %9s\n' column writers "" CREATE CIC job job/CIC job/CREATE
for column in account payload; do
    for clients in 0 "$CLIENTS"; do
        c=$(bench_col "create/$column/$clients" 2) ; k=$(bench_col "cic/$column/$clients" 2) ; j=$(bench_col "job/$column/$clients" 2)
        printf '%-9s %-8s %-10s %10s %10s %10s %9s %9s\n' "$column" "$clients" "build ms" "$c" "$k" "$j" \
            "$(awk -v a="$j" -v b="$k" 'BEGIN { printf "%.2f", a / b }')" \
            "$(awk -v a="$j" -v b="$c" 'BEGIN { printf "%.2f", a / b }')"
        if [ "$clients" -gt 0 ]; then
            printf '%-9s %-8s %-10s %10s %10s %10s\n' "" "" "write ms" "$(bench_colmax "create/$column/$clients" 3)" \
                "$(bench_colmax "cic/$column/$clients" 3)" "$(bench_colmax "job/$column/$clients" 3)"
            printf '%-9s %-8s %-10s %10s %10s %10s\n' "" "" "xmin age" "$(bench_colmax "create/$column/$clients" 4)" \
                "$(bench_colmax "cic/$column/$clients" 4)" "$(bench_colmax "job/$column/$clients" 4)"
        else
            printf '%-9s %-8s %-10s %10s %10s %10s\n' "" "" "WAL MB" "$(bench_col "create/$column/$clients" 5)" \
                "$(bench_col "cic/$column/$clients" 5)" "$(bench_col "job/$column/$clients" 5)"
        fi
    done
done
