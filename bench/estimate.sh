#!/usr/bin/env bash
# bench/estimate.sh -- benchmark (not a test): how close estimate_ddl comes to the job it
# estimates.
#
# (As root, or on a running server without root: bench/lib.sh.)
# As root: installs/builds like scripts/demo, starts a throwaway cluster (default settings), and
# for each size in SIZES fills `events` with that many rows; then for each of two views (a
# projection of half the rows, an aggregate) asks estimate_ddl, runs the job (background_ddl on,
# waited for with await_ddl) and compares: the estimated seconds against the job's submitted_at
# to finished_at, the estimated rows against the view's, the estimated bytes against the view's
# heap (pg_relation_size), the estimated WAL against the WAL the job wrote; then the same for two
# indexes (a two-column one, a partial one: rows are the index's reltuples, bytes its size).
# Prints the ratios (estimate / actual; the target is 0.5 to 2).
#
# Usage: bench/estimate.sh   (env SIZES, default "1000000 5000000 20000000")
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

SIZES=${SIZES:-"1000000 5000000 20000000"}
export PGPORT=${PGPORT:-54336}
QUERIES=(
    "SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"
    "SELECT account, count(*) AS n, sum(id) AS s, max(payload) AS m FROM events GROUP BY account"
)
NAMES=(projection aggregate)
# the indexes: their statements; "rows" is the index's reltuples, "MB" its size
INDEXES=(
    "CREATE INDEX est_idx ON events (account, payload)"
    "CREATE INDEX est_idx ON events (id) WHERE account < 500"
)
INDEX_NAMES=(index partial_index)

# report SIZE NAME EST_S S EST_ROWS ROWS EST_BYTES BYTES EST_WAL WAL: one line of ratios
report() {
    awk -v size="$1" -v name="$2" -v es="$3" -v s="$4" -v er="$5" -v r="$6" \
        -v eb="$7" -v b="$8" -v ew="$9" -v w="${10}" '
        function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
        BEGIN { printf "%-10s %-14s %9.2f %9.2f %6s %12d %12d %6s %11.1f %11.1f %6s %11.1f %11.1f %6s\n",
                       size, name, es, s, ratio(es, s), er, r, ratio(er, r),
                       eb / 1048576, b / 1048576, ratio(eb, b), ew / 1048576, w / 1048576, ratio(ew, w) }' \
        >>"$B/results"
    tail -n1 "$B/results"
}

bench_server "shared_buffers = 1GB" "max_wal_size = 8GB" "checkpoint_timeout = 30min" "autovacuum = off"
sql -q -c "CREATE EXTENSION background_ddl"

# measure SIZE NAME WHAT STATEMENT OBJECT ROWS_QUERY DROP: estimate_ddl(WHAT), then STATEMENT as a
# job; report the estimate against the job's time, OBJECT's rows (ROWS_QUERY), size and WAL
measure() {
    local size=$1 name=$2 what=$3 statement=$4 object=$5 rows_query=$6 drop=$7
    local est_s est_rows est_bytes est_wal wal0 job job_s rows bytes wal
    read -r est_s est_rows est_bytes est_wal <<<"$(sql -F ' ' -c "SELECT coalesce(seconds, -1), rows, bytes, wal_bytes
                                                                FROM estimate_ddl(\$\$$what\$\$)")"
    wal0=$(sql -c "SELECT pg_current_wal_insert_lsn()")
    job=$(sql -c "SET background_ddl = on" -c "$statement" -c "SELECT last_ddl_job()" | tail -n1)
    sql -q -c "CALL await_ddl($job)"
    read -r job_s rows bytes wal <<<"$(sql -F ' ' -c "SELECT extract(epoch FROM finished_at - submitted_at),
                                                        ($rows_query), pg_relation_size('$object'),
                                                        pg_current_wal_insert_lsn() - '$wal0'::pg_lsn
                                                   FROM pg_stat_background_ddl WHERE id = $job")"
    sql -q -c "$drop" -c "CHECKPOINT"
    report "$size" "$name" "$est_s" "$job_s" "$est_rows" "$rows" "$est_bytes" "$bytes" "$est_wal" "$wal"
}

printf '%-10s %-14s %9s %9s %6s %12s %12s %6s %11s %11s %6s %11s %11s %6s\n' \
    rows query est_s job_s ratio est_rows rows ratio est_MB MB ratio est_walMB walMB ratio >"$B/results"
for size in $SIZES; do
    bench_fill_events "$size"
    sql -q -c "CHECKPOINT"
    for i in 0 1; do
        measure "$size" "${NAMES[$i]}" "${QUERIES[$i]}" "CREATE MATERIALIZED VIEW mv AS ${QUERIES[$i]}" \
            mv "SELECT count(*) FROM mv" "DROP MATERIALIZED VIEW mv"
    done
    for i in 0 1; do
        measure "$size" "${INDEX_NAMES[$i]}" "${INDEXES[$i]}" "${INDEXES[$i]}" \
            est_idx "SELECT reltuples::bigint FROM pg_class WHERE relname = 'est_idx'" "DROP INDEX est_idx"
    done
done
echo
cat "$B/results"
