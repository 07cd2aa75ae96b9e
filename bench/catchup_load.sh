#!/usr/bin/env bash
# bench/catchup_load.sh -- benchmark (not a test): building views over a table that writers keep
# changing.  pgbench updates single rows of `events`, spread over the table, at a steady rate
# (pgbench -R), and about 5 rows a second of its 1,000-row dimension table `accounts`; under that
# same load a projection, an aggregating view and a join view are built blocking and as
# background jobs.
#
# For each configuration ROWS:UPDATES_PER_SECOND (default "8000000:1000 2000000:300 2000000:5000")
# it reports, per view: the blocking build time and the background build time (submit to
# succeeded) under the load, medians over the rounds, their ratio and the worst round's, the
# longest time any of the build's processes held a snapshot (sampled every 20 ms: the blocking
# session, or the job's workers), and from the job's
# view row the rows it recomputed after the backfill (rows_recomputed), its catch-up passes, and
# where its time went: queued (submit to start), built (start to cut-over), cut over (to the end).
# It exits non-zero if a job does not succeed.  (Exactness under load is the TAP tests' to check:
# test/t/015_catchup_load.pl compares each view with its query at the job's cut-over snapshot.)
#
# Usage: bench/catchup_load.sh [CONFIG...]   (env ROUNDS, default 1; EXTRA_CONF, more
#        postgresql.conf lines, one per line, e.g. "background_ddl.max_workers_per_job = 1")
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

CONFIGS=("$@")
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=(8000000:1000 2000000:300 2000000:5000)
ROUNDS=${ROUNDS:-1}
export PGPORT=${PGPORT:-54332}
AGG="SELECT account, count(*) AS n, sum(amount) AS total, max(amount) AS top FROM events GROUP BY account"
JOIN="SELECT e.id, e.account, a.name, e.amount FROM events e JOIN accounts a ON a.id = e.account"
PROJ="SELECT id, account, amount FROM events WHERE amount % 2 = 0"

mapfile -t extra_conf <<<"${EXTRA_CONF:-}"
# Autovacuum stays on, as on a server under a write load: it vacuums the writers' dead rows, and
# the dirty log and recomputed rows that a catch-up deletes as it goes.
bench_server "shared_buffers = 1GB" "max_wal_size = 8GB" "checkpoint_timeout = 30min" "${extra_conf[@]}"
sql -q -c "CREATE EXTENSION background_ddl"

# build VIEW MODE NAME: build under the running load; prints "ms max_xmin_s recomputed passes"
build() {
    local query=$1 mode=$2 name=$3 t0 t1 job state out=""
    bench_snapshot_start "$B/xmin_$mode"
    t0=$(date +%s%N)
    if [ "$mode" = blocking ]; then
        PGAPPNAME=bench_build sql -q -c "CREATE MATERIALIZED VIEW $name AS $query"
    else
        job=$(bench_background "CREATE MATERIALIZED VIEW $name AS $query") || exit 1
    fi
    t1=$(date +%s%N)
    if [ "$mode" = background ]; then
        out=$(sql -F' ' -c "SELECT coalesce(rows_recomputed, 0), coalesce(catchup_passes, 0),
                                   round(extract(epoch FROM started_at - submitted_at) * 1000),
                                   round(extract(epoch FROM cutover_at - started_at) * 1000),
                                   round(extract(epoch FROM finished_at - cutover_at) * 1000)
                              FROM pg_stat_background_ddl WHERE id = $job" 2>/dev/null || echo "- - - - -")
    fi
    bench_snapshot_stop "$B/xmin_$mode"
    echo "$(( (t1 - t0) / 1000000 )) $BENCH_SNAPSHOT_HELD ${out:-- - - - -}"
}

: >"$B/results"
for config in "${CONFIGS[@]}"; do
    rows=${config%%:*}
    rate=${config##*:}
    echo "== loading $rows rows into events"
    sql -q -c "DROP TABLE IF EXISTS events, accounts CASCADE" \
        -c "CREATE TABLE accounts (id int PRIMARY KEY, name text NOT NULL)" \
        -c "INSERT INTO accounts SELECT g, md5(g::text) FROM generate_series(0, 999) g" \
        -c "CREATE TABLE events (id bigint PRIMARY KEY, account int NOT NULL, amount int NOT NULL,
                                 payload text NOT NULL) WITH (fillfactor = 90)" \
        -c "INSERT INTO events SELECT g, g % 1000, g % 97, md5(g::text) FROM generate_series(1, $rows) g" \
        -c "CREATE INDEX ON events (account)" \
        -c "VACUUM ANALYZE events, accounts" -c "CHECKPOINT"
    printf '\\set id random(1, %d)\nUPDATE events SET amount = amount + 1 WHERE id = :id;\n' "$rows" \
        >"$B/events.sql"
    printf '\\set a random(0, 999)\nUPDATE accounts SET name = md5(random()::text) WHERE id = :a;\n' \
        >"$B/accounts.sql"
    for round in $(seq "$ROUNDS"); do
        for view in proj agg join; do
            case $view in proj) query=$PROJ ;; agg) query=$AGG ;; join) query=$JOIN ;; esac
            for mode in blocking background; do
                bench_writer load_events -n -c 2 -j 2 -R "$rate" -T 600 -f events.sql
                bench_writer load_accounts -n -c 1 -R 5 -T 600 -f accounts.sql
                sleep 2
                read -r ms xmin recomputed passes queued built cutover \
                    <<<"$(build "$query" "$mode" "${view}_${mode}_$round")"
                bench_writers_stop
                echo "$rows $rate $view $mode $ms $xmin $recomputed $passes $round" >>"$B/results"
                echo "== $rows rows, $rate updates/s, round $round: $view $mode ${ms} ms, snapshot held up to ${xmin} s, recomputed $recomputed rows in $passes passes (queued ${queued:--} ms, built ${built:--} ms, cut over ${cutover:--} ms)"
            done
            sql -q -c "DROP MATERIALIZED VIEW ${view}_blocking_$round, ${view}_background_$round"
        done
    done
done

echo
printf '%-9s %6s %-5s %10s %10s %6s %6s %10s %10s %10s %7s\n' rows upd/s view block_ms bg_ms ratio \
    worst block_xmin bg_xmin recomputed passes
for config in "${CONFIGS[@]}"; do
    rows=${config%%:*}
    rate=${config##*:}
    for view in proj agg join; do
        pick() { awk -v r="$rows" -v u="$rate" -v v="$view" -v m="$1" -v c="$2" \
                   '$1 == r && $2 == u && $3 == v && $4 == m { print $c }' "$B/results" | median; }
        b=$(pick blocking 5); g=$(pick background 5)
        # the worst round: the highest ratio of a round's background time to its blocking time
        worst=$(awk -v r="$rows" -v u="$rate" -v v="$view" \
                  '$1 == r && $2 == u && $3 == v { t[$9, $4] = $5; n[$9] = 1 }
                   END { w = 0; for (k in n) if (t[k, "background"] / t[k, "blocking"] > w) w = t[k, "background"] / t[k, "blocking"]; print w }' \
                  "$B/results")
        printf '%-9s %6s %-5s %10s %10s %6.2f %6.2f %10.2f %10.2f %10s %7s\n' "$rows" "$rate" "$view" "$b" "$g" \
            "$(awk -v a="$g" -v b="$b" 'BEGIN { print a / b }')" "$worst" "$(pick blocking 6)" "$(pick background 6)" \
            "$(pick background 7)" "$(pick background 8)"
    done
done
