#!/usr/bin/env bash
# bench/alter_table.sh -- benchmark (not a test): ALTER TABLE ... ADD CONSTRAINT on a table that writers
# keep busy, three ways side by side, ROUNDS times each in rotating order: the blocking statement,
# the manual recipe (ADD ... NOT VALID, then VALIDATE CONSTRAINT), and the background job.  pgbench
# updates and inserts rows of `events` (CLIENTS clients, full speed) throughout.  From pgbench's
# per-transaction log it reports, as medians over the rounds: the statement's time (for the job,
# submitted to succeeded), the writers' throughput during it, and the longest single write during
# it (how long writers were blocked), with the time ratios to the blocking statement, and the longest
# time the statement held a snapshot (sampled every 100 ms: its session's transactions, or the
# job's worker's; what holds back VACUUM).  The job runs
# twice: with its defaults (a chunk checked by its worker and parallel workers), and with
# max_parallel_maintenance_workers = 0 (one_process: its worker alone).
#
# With CONSTRAINT=ATTACH, the statement is ALTER TABLE pev ATTACH PARTITION pev_new of ROWS rows to
# a table partitioned by id, whose default partition has ROWS/10 rows; the writers update rows of
# an old partition and of the default partition, and insert rows into the default partition
# through the parent (ATTACH reads the table attached and the default partition under ACCESS
# EXCLUSIVE on both); the recipe is a CHECK NOT VALID on each of the two tables, VALIDATE, ATTACH,
# DROP of both CHECKs.
#
# With CONSTRAINT=PRIMARY, the statement is ALTER TABLE events ADD PRIMARY KEY (id) on a table
# whose id allows nulls and has a plain index (the writers' updates use it): PostgreSQL builds the
# unique index and sets id NOT NULL under ACCESS EXCLUSIVE; the recipe (strong_migrations') is a
# CHECK (id IS NOT NULL) NOT VALID, VALIDATE, CREATE UNIQUE INDEX CONCURRENTLY, ADD PRIMARY KEY
# USING INDEX, DROP of the CHECK.
#
# Usage: bench/alter_table.sh [ROWS]   (env ROWS, default 10000000; ROUNDS, default 3;
#        CLIENTS, default 4; CONSTRAINT, what is added: default a CHECK; e.g.
#        CONSTRAINT='FOREIGN KEY (account) REFERENCES accounts' for a foreign key to accounts(account),
#        a table of the 1,000 accounts the writers use; ATTACH; or PRIMARY)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-10000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
CONSTRAINT=${CONSTRAINT:-"CHECK (account >= 0 AND length(payload) <= 64)"}
export PGPORT=${PGPORT:-54332}

bench_server "${BENCH_CONF[@]}"

bench_writes_setup "$ROWS"
sql -q -c "CREATE TABLE accounts (account int PRIMARY KEY)" \
    -c "INSERT INTO accounts SELECT generate_series(0, 999)" -c "VACUUM ANALYZE accounts"
WRITES=writes.sql
if [ "$CONSTRAINT" = ATTACH ]; then
    # the new bound [ROWS, 2 ROWS); the default partition's rows from 10 ROWS on
    sql -q -c "DROP TABLE events" \
        -c "CREATE TABLE pev (id bigint, account int NOT NULL, payload text NOT NULL) PARTITION BY RANGE (id)" \
        -c "CREATE TABLE pev_old PARTITION OF pev FOR VALUES FROM (0) TO ($ROWS)" \
        -c "CREATE TABLE pev_def PARTITION OF pev DEFAULT" \
        -c "INSERT INTO pev SELECT g, g % 1000, md5(g::text) FROM generate_series(0, $ROWS / 10) g" \
        -c "INSERT INTO pev SELECT 10 * $ROWS + g, g % 1000, md5(g::text) FROM generate_series(0, $ROWS / 10) g" \
        -c "CREATE TABLE pev_new (id bigint, account int NOT NULL, payload text NOT NULL)" \
        -c "INSERT INTO pev_new SELECT $ROWS + g, g % 1000, md5(g::text) FROM generate_series(0, $ROWS - 1) g" \
        -c "CREATE INDEX pev_id ON pev (id)" -c "CREATE INDEX pev_new_id ON pev_new (id)" \
        -c "CREATE SEQUENCE pev_far START $((20 * ROWS))" -c "VACUUM ANALYZE pev, pev_new"
    cat >"$B/attach_writes.sql" <<EOS
\\set id random(0, $((ROWS / 10)))
\\set far random($((10 * ROWS)), $((10 * ROWS + ROWS / 10)))
UPDATE pev SET payload = md5(random()::text) WHERE id = :id;
UPDATE pev SET payload = md5(random()::text) WHERE id = :far;
INSERT INTO pev VALUES (nextval('pev_far'), 0, 'new');
EOS
    WRITES=attach_writes.sql
fi

if [ "$CONSTRAINT" = PRIMARY ]; then
    sql -q -c "ALTER TABLE events DROP CONSTRAINT events_pkey, ALTER COLUMN id DROP NOT NULL" \
        -c "CREATE INDEX events_id ON events (id)" -c "VACUUM ANALYZE events"
fi

# measure MODE ROUND: run pgbench around one ALTER TABLE; print "tps_during max_latency_ms ms
# snapshot_held_s" (its session, named bench_build, or the job's worker)
measure() {
    local mode=$1 round=$2 name="c_${1}_$2" t0 t1
    rm -f "$B"/pgbench_log_"$mode".*
    (cd "$B" && "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T 40 -f "$WRITES" -l --log-prefix="pgbench_log_$mode" \
        >"$B/pgbench_$mode.out" 2>&1) &
    local writer=$!
    sleep 3
    export PGAPPNAME=bench_build
    bench_snapshot_start "$B/snapshot_$mode" 0.1
    t0=$(date +%s%N)
    local attach="ALTER TABLE pev ATTACH PARTITION pev_new FOR VALUES FROM ($ROWS) TO ($((2 * ROWS)))"
    case $CONSTRAINT-$mode in
        ATTACH-blocking) sql -q -c "$attach" ;;
        ATTACH-recipe) sql -q -c "ALTER TABLE pev_new ADD CONSTRAINT b CHECK (id IS NOT NULL AND id >= $ROWS AND id < $((2 * ROWS))) NOT VALID" \
                              -c "ALTER TABLE pev_new VALIDATE CONSTRAINT b" \
                              -c "ALTER TABLE pev_def ADD CONSTRAINT d CHECK (id IS NULL OR id < $ROWS OR id >= $((2 * ROWS))) NOT VALID" \
                              -c "ALTER TABLE pev_def VALIDATE CONSTRAINT d" \
                              -c "$attach" -c "ALTER TABLE pev_new DROP CONSTRAINT b" -c "ALTER TABLE pev_def DROP CONSTRAINT d" ;;
        ATTACH-background) bench_background "$attach" >/dev/null ;;
        ATTACH-one_process) PGOPTIONS="-c max_parallel_maintenance_workers=0" bench_background "$attach" >/dev/null ;;
        PRIMARY-blocking) sql -q -c "ALTER TABLE events ADD CONSTRAINT $name PRIMARY KEY (id)" ;;
        PRIMARY-recipe) sql -q -c "ALTER TABLE events ADD CONSTRAINT nn CHECK (id IS NOT NULL) NOT VALID" \
                               -c "ALTER TABLE events VALIDATE CONSTRAINT nn" \
                               -c "CREATE UNIQUE INDEX CONCURRENTLY $name ON events (id)" \
                               -c "ALTER TABLE events ADD CONSTRAINT $name PRIMARY KEY USING INDEX $name" \
                               -c "ALTER TABLE events DROP CONSTRAINT nn" ;;
        PRIMARY-background) bench_background "ALTER TABLE events ADD CONSTRAINT $name PRIMARY KEY (id)" >/dev/null ;;
        *-blocking) sql -q -c "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT" ;;
        *-recipe) sql -q -c "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT NOT VALID" \
                         -c "ALTER TABLE events VALIDATE CONSTRAINT $name" ;;
        *-background) bench_background "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT" >/dev/null ;;
        *-one_process) PGOPTIONS="-c max_parallel_maintenance_workers=0" \
                           bench_background "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT" >/dev/null ;;
    esac
    t1=$(date +%s%N)
    bench_snapshot_stop "$B/snapshot_$mode"
    if [ "$CONSTRAINT" = ATTACH ]; then
        [ "$(sql -c "SELECT relispartition FROM pg_class WHERE relname = 'pev_new'")" = t ] ||
            { echo "pev_new is not attached after $mode" >&2; exit 1; }
    else
        [ "$(sql -c "SELECT convalidated FROM pg_constraint WHERE conname = '$name'")" = t ] ||
            { echo "constraint $name is not valid after $mode" >&2; exit 1; }
    fi
    wait "$writer"
    if [ "$CONSTRAINT" = ATTACH ]; then
        sql -q -c "ALTER TABLE pev DETACH PARTITION pev_new"
    elif [ "$CONSTRAINT" = PRIMARY ]; then
        sql -q -c "ALTER TABLE events DROP CONSTRAINT $name, ALTER COLUMN id DROP NOT NULL"
    else
        sql -q -c "ALTER TABLE events DROP CONSTRAINT $name"
    fi
    # the next way starts from a vacuumed database, as autovacuum (off here, for steady timings)
    # would leave it: else each round reads more dead row versions of the writers than the last,
    # in the table and in the job's capture log
    sql -q -c "VACUUM"
    # per-transaction log: client tx latency_us script epoch_s epoch_us (end of the transaction);
    # a write that ended after t0 and had started before t1
    cat "$B"/pgbench_log_"$mode".* | awk -v t0="$t0" -v t1="$t1" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 && end_ns <= t1) during++
          if (end_ns >= t0 && end_ns - $3 * 1000 <= t1 && $3 > max) max = $3 }
        END { printf "%.0f %.1f %.0f\n", during / ((t1 - t0) / 1e9), max / 1000, (t1 - t0) / 1e6 }' |
        sed "s/\$/ $BENCH_SNAPSHOT_HELD/"
}

: >"$B/results"
# (a primary key's job builds its index as CREATE INDEX CONCURRENTLY: no chunk to check in parallel)
modes=(blocking recipe background)
[ "$CONSTRAINT" = PRIMARY ] || modes+=(one_process)
for round in $(seq "$ROUNDS"); do
    for i in "${!modes[@]}"; do
        mode=${modes[$(((i + round - 1) % ${#modes[@]}))]}
        read -r during max ms held <<<"$(measure "$mode" "$round")"
        echo "$mode $during $max $ms $held" >>"$B/results"
        echo "== round $round: $mode $ms ms; writers $during tx/s during it; longest write $max ms; snapshot held up to $held s"
    done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() {
    local label=$1 m
    shift
    printf '%-36s' "$label"
    for m in "${modes[@]}"; do printf ' %12s' "$("$@" "$m")"; done
    echo
}
time_ratio() { ratio "$(bench_col "$1" 4)" "$(bench_col blocking 4)"; }
bench_col_of() { bench_col "$2" "$1"; }
bench_colmax_of() { bench_colmax "$2" "$1"; }

echo
echo "events rows: $ROWS   rounds: $ROUNDS   writer clients: $CLIENTS   $CONSTRAINT"
echo "(one_process: the job with max_parallel_maintenance_workers = 0, its chunks checked by its worker alone)"
row "" echo
row "median time (ms)" bench_col_of 4
row "time / blocking" time_ratio
row "median writer tx/s during it" bench_col_of 2
row "longest write during it (ms)" bench_colmax_of 3
row "longest snapshot held (s)" bench_colmax_of 5
