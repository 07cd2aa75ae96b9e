#!/usr/bin/env bash
# bench/speed.sh -- benchmark (not a test): background CREATE MATERIALIZED VIEW against the
# blocking statement at several table sizes, in two pairings:
#   - defaults both ways: the blocking statement with PostgreSQL's parallel query, the job with
#     background_ddl.max_workers_per_job = 2;
#   - one process each: max_parallel_workers_per_gather = 0, max_workers_per_job = 1.
# For each size and pairing it runs bench/mv_build.sh (a fresh cluster, ROUNDS rounds alternating
# the order, medians, both views compared), and prints one table of the medians and ratios.
#
# Usage: bench/speed.sh           (env SIZES, default "1000000 5000000 20000000"; ROUNDS, default 3)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

SIZES=${SIZES:-"1000000 5000000 20000000"}
export ROUNDS=${ROUNDS:-3}
LOGDIR=$(mktemp -d /tmp/background_ddl-speed.XXXXXX)

declare -A confs=(
    [defaults]=""
    [one_process]=$'max_parallel_workers_per_gather = 0\nbackground_ddl.max_workers_per_job = 1'
)
results=()
for size in $SIZES; do
    for pairing in defaults one_process; do
        log=$LOGDIR/$pairing.$size.log
        echo "== $size rows, $pairing (log: $log)"
        EXTRA_CONF=${confs[$pairing]} bash "$(dirname "$0")/mv_build.sh" "$size" >"$log" 2>&1 \
            || { tail -n 20 "$log"; exit 1; }
        read -r block bg <<<"$(sed -nE 's/^median build time \(ms\) +([0-9.]+) +([0-9.]+).*/\1 \2/p' "$log")"
        ratio=$(sed -nE 's/^ratio background\/blocking +([0-9.]+).*/\1/p' "$log")
        results+=("$(printf '%-12s %-12s %14s %14s %8s' "$size" "$pairing" "$block" "$bg" "$ratio")")
    done
done

echo
echo "median build times over $ROUNDS rounds (ms); logs in $LOGDIR"
printf '%-12s %-12s %14s %14s %8s\n' rows pairing blocking background ratio
printf '%s\n' "${results[@]}"
