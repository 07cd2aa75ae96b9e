#!/usr/bin/env bash
# bench/alter_table.sh -- benchmark (not a test): ALTER TABLE ... ADD CONSTRAINT on a table that writers
# keep busy, three ways side by side, ROUNDS times each in rotating order: the blocking statement,
# the manual recipe (ADD ... NOT VALID, then VALIDATE CONSTRAINT), and the background job.  pgbench
# updates and inserts rows of `events` (CLIENTS clients, full speed) throughout.  From pgbench's
# per-transaction log it reports, as medians over the rounds: the statement's time (for the job,
# submitted to succeeded), the writers' throughput during it, and the longest single write during
# it (how long writers were blocked), with the time ratios to the blocking statement.
#
# Usage: bench/alter_table.sh [ROWS]   (env ROWS, default 10000000; ROUNDS, default 3;
#        CLIENTS, default 4; CONSTRAINT, what is added: default a CHECK; e.g.
#        CONSTRAINT='FOREIGN KEY (account) REFERENCES accounts' for a foreign key to accounts(account),
#        a table of the 1,000 accounts the writers use)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-10000000}}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
CONSTRAINT=${CONSTRAINT:-"CHECK (account >= 0 AND length(payload) <= 64)"}
export PGPORT=${PGPORT:-54332}

bench_server "shared_buffers = 1GB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" "autovacuum = off"

bench_writes_setup "$ROWS"
sql -q -c "CREATE TABLE accounts (account int PRIMARY KEY)" \
    -c "INSERT INTO accounts SELECT generate_series(0, 999)" -c "VACUUM ANALYZE accounts"

# measure MODE ROUND: run pgbench around one ALTER TABLE; print "tps_during max_latency_ms ms"
measure() {
    local mode=$1 round=$2 name="c_${1}_$2" t0 t1
    rm -f "$B"/pgbench_log_"$mode".*
    (cd "$B" && "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T 40 -f writes.sql -l --log-prefix="pgbench_log_$mode" \
        >"$B/pgbench_$mode.out" 2>&1) &
    local writer=$!
    sleep 3
    t0=$(date +%s%N)
    case $mode in
        blocking) sql -q -c "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT" ;;
        recipe) sql -q -c "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT NOT VALID" \
                       -c "ALTER TABLE events VALIDATE CONSTRAINT $name" ;;
        background) bench_background "ALTER TABLE events ADD CONSTRAINT $name $CONSTRAINT" >/dev/null ;;
    esac
    t1=$(date +%s%N)
    [ "$(sql -c "SELECT convalidated FROM pg_constraint WHERE conname = '$name'")" = t ] ||
        { echo "constraint $name is not valid after $mode" >&2; exit 1; }
    wait "$writer"
    sql -q -c "ALTER TABLE events DROP CONSTRAINT $name"
    # per-transaction log: client tx latency_us script epoch_s epoch_us (end of the transaction);
    # a write that ended after t0 and had started before t1
    cat "$B"/pgbench_log_"$mode".* | awk -v t0="$t0" -v t1="$t1" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 && end_ns <= t1) during++
          if (end_ns >= t0 && end_ns - $3 * 1000 <= t1 && $3 > max) max = $3 }
        END { printf "%.0f %.1f %.0f\n", during / ((t1 - t0) / 1e9), max / 1000, (t1 - t0) / 1e6 }'
}

: >"$B/results"
modes=(blocking recipe background)
for round in $(seq "$ROUNDS"); do
    for i in 0 1 2; do
        mode=${modes[$(((i + round - 1) % 3))]}
        read -r during max ms <<<"$(measure "$mode" "$round")"
        echo "$mode $during $max $ms" >>"$B/results"
        echo "== round $round: $mode $ms ms; writers $during tx/s during it; longest write $max ms"
    done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo
echo "events rows: $ROWS   rounds: $ROUNDS   writer clients: $CLIENTS   $CONSTRAINT"
printf '%-36s %12s %12s %12s\n' "" blocking recipe background
printf '%-36s %12s %12s %12s\n' "median time (ms)" "$(bench_col blocking 4)" "$(bench_col recipe 4)" "$(bench_col background 4)"
printf '%-36s %12s %12s %12s\n' "time / blocking" 1.00 "$(ratio "$(bench_col recipe 4)" "$(bench_col blocking 4)")" \
    "$(ratio "$(bench_col background 4)" "$(bench_col blocking 4)")"
printf '%-36s %12s %12s %12s\n' "median writer tx/s during it" "$(bench_col blocking 2)" "$(bench_col recipe 2)" "$(bench_col background 2)"
printf '%-36s %12s %12s %12s\n' "longest write during it (ms)" "$(bench_colmax blocking 3)" "$(bench_colmax recipe 3)" \
    "$(bench_colmax background 3)"
