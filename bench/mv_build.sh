#!/usr/bin/env bash
# bench/mv_build.sh -- benchmark (not a test): blocking vs background CREATE MATERIALIZED VIEW.
#
# On a server of bench_server (bench/lib.sh: as root a tuned throwaway cluster), fills `events`
# with ROWS rows, then builds the same view ROUNDS times each way, mv_block (blocking) and mv_bg
# (background job), alternating which goes first (the second build of a pair runs on a warmer,
# dirtier machine). A writer commits ~100 tiny transactions/s (pgbench -R 100) throughout and a
# sampler records, every 100 ms, the oldest xmin held by any other backend (in xids and in
# seconds), autovacuum off. Prints median build times, submit latency, xmin ages, how many distinct
# progress values pg_stat_background_ddl showed during each background build (looked at every 20 ms
# by one psql \watch),
# and checks the views are equal.
#
# Usage: bench/mv_build.sh [ROWS]     (or env ROWS, default 5000000; env QUERY to change the view;
#        ROUNDS, default 3; WRITER_RATE, default 100; EXTRA_CONF, more postgresql.conf lines;
#        FIRST_BACKGROUND=1: round 1 starts with the background build)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

ROWS=${1:-${ROWS:-5000000}}
ROUNDS=${ROUNDS:-3}
QUERY=${QUERY:-"SELECT id, account, upper(payload) AS p FROM events WHERE account < 500"}
export PGPORT=${PGPORT:-54330}

# EXTRA_CONF: more postgresql.conf lines, one per line (e.g. "background_ddl.batch_time = 1s")
mapfile -t extra_conf <<<"${EXTRA_CONF:-}"
# autovacuum off: its vacuum/analyze of the view just built would compete with the next build
# for the two cores (and hold an xmin the sampler would see); both ways are measured alike.
bench_server "${BENCH_CONF[@]}" "${extra_conf[@]}"

sql -q -c "CREATE EXTENSION background_ddl"
bench_fill_events "$ROWS"
sql -q -c "CREATE TABLE ticks (id bigserial PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())"

# Writer: ~100 commits/s to a separate table, for the whole run.
echo "INSERT INTO ticks DEFAULT VALUES;" >"$B/ticks.sql"
bench_writer ticks -n -R "${WRITER_RATE:-100}" -T 36000 -c 1 -f ticks.sql

# Sampler: until file $1 disappears, every 100 ms print "xid_age seconds" of the oldest xmin.
sample_xmin() {
    while [ -e "$1" ]; do
        echo "SELECT coalesce(max(age(backend_xmin)), 0),
                     coalesce(round(extract(epoch FROM max(now() - xact_start)), 3), 0)
              FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid();"
        sleep 0.1
    done | sql -F ' '
}
start_sampler() { touch "$B/sampling"; sample_xmin "$B/sampling" >"$B/$1.samples" & SAMPLER=$!; }
stop_sampler() { rm -f "$B/sampling"; wait "$SAMPLER"; }
warm() { sql -q -c "SELECT count(*) FROM events" -c "CHECKPOINT" >/dev/null; }

# What pg_stat_background_ddl shows as the progress of job $1, every 20 ms, into file $2 (one
# session, a transaction per look; a prepared statement, so that the view's planning is not paid
# 50 times a second), until stop_progress_watch.  It runs during both builds (for the blocking
# one, of no job), so that both pay for it.
start_progress_watch() {
    printf '%s\n' "PREPARE progress AS SELECT progress FROM pg_stat_background_ddl WHERE id = \$1;" \
        "EXECUTE progress($1) \\watch 0.02" | "$PGBIN/psql" -X -At >"$2" 2>/dev/null &
    PROGRESS_WATCH=$!
}
stop_progress_watch() { kill "$PROGRESS_WATCH" 2>/dev/null || true; wait "$PROGRESS_WATCH" 2>/dev/null || true; }

# build_blocking ROUND: prints the build time in ms
build_blocking() {
    warm
    start_sampler "block$1"
    start_progress_watch 0 /dev/null
    sql -c '\timing on' -c "CREATE MATERIALIZED VIEW mv_block AS $QUERY" | timing_ms
    stop_progress_watch
    stop_sampler
}

# build_background ROUND: prints "submit_ms build_ms breakdown" (build: submit to finished_at)
build_background() {
    local out job state
    warm
    start_sampler "bg$1"
    out=$(sql -c "SET background_ddl = on" -c '\timing on' -c "CREATE MATERIALIZED VIEW mv_bg AS $QUERY" \
              -c '\timing off' -c "SELECT 'job=' || last_ddl_job()")
    job=$(sed -n 's/^job=//p' <<<"$out")
    start_progress_watch "$job" "$B/progress$1"
    # Wait with await_ddl: one session, which holds no snapshot while it sleeps (polling from new
    # psql processes took a good part of a core from the job, and not from the blocking build)
    sql -q -c "CALL await_ddl($job, '1 hour')" 2>/dev/null || true
    state=$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")
    stop_progress_watch
    stop_sampler
    if [ "$state" != succeeded ]; then
        sql -c "SELECT 'job $job $state: ' || coalesce(error, '') FROM pg_stat_background_ddl WHERE id = $job" >&2
        exit 1
    fi
    # Where the background time went: waiting to start, inside chunks.
    echo "$(timing_ms <<<"$out") $(sql -c "
        SELECT format('%s %s chunks=%s start_delay_ms=%s in_chunks_ms=%s slowest_chunk_ms=%s',
                      round(extract(epoch FROM j.finished_at - j.submitted_at) * 1000, 1),
                      '', j.chunks_done,
                      round(extract(epoch FROM j.started_at - j.submitted_at) * 1000),
                      round(extract(epoch FROM sum(c.duration)) * 1000),
                      round(extract(epoch FROM max(c.duration)) * 1000))
          FROM pg_stat_background_ddl j LEFT JOIN background_ddl.chunk c ON c.job_id = j.id
         WHERE j.id = $job GROUP BY j.id, j.finished_at, j.submitted_at, j.started_at, j.chunks_done")"
}

: >"$B/block.times"; : >"$B/bg.times"; : >"$B/submit.times"
for round in $(seq "$ROUNDS"); do
    if [ $(( (round + ${FIRST_BACKGROUND:-0}) % 2 )) = 1 ]; then order="blocking background"; else order="background blocking"; fi
    for kind in $order; do
        if [ "$kind" = blocking ]; then
            ms=$(build_blocking "$round"); echo "$ms" >>"$B/block.times"
            echo "== round $round: blocking   $ms ms"
        else
            read -r submit_ms ms detail <<<"$(build_background "$round")"
            echo "$ms" >>"$B/bg.times"; echo "$submit_ms" >>"$B/submit.times"
            echo "== round $round: background $ms ms (submit $submit_ms ms; $detail)"
        fi
    done
    diff1=$(sql -c "SELECT count(*) FROM (TABLE mv_block EXCEPT ALL TABLE mv_bg) x")
    diff2=$(sql -c "SELECT count(*) FROM (TABLE mv_bg EXCEPT ALL TABLE mv_block) x")
    [ "$diff1" = 0 ] && [ "$diff2" = 0 ] \
        || { echo "MISMATCH in round $round: $diff1 rows only in mv_block, $diff2 only in mv_bg"; exit 1; }
    nrows=$(sql -c "SELECT count(*) FROM mv_bg")
    sql -q -c "DROP MATERIALIZED VIEW mv_block, mv_bg"
done

bench_writers_stop
ticks=$(sql -c "SELECT count(*) FROM ticks")
block_ms=$(median <"$B/block.times"); bg_ms=$(median <"$B/bg.times"); submit_ms=$(median <"$B/submit.times")
xmax() { cat "$B"/$1*.samples | awk -v c="$2" 'BEGIN { m = 0 } $c + 0 > m { m = $c + 0 } END { print m }'; }

echo
echo "events rows: $ROWS   view rows: $nrows   rounds: $ROUNDS   writer commits: $ticks"
printf '%-32s %14s %14s\n' "" blocking background
printf '%-32s %14s %14s\n' "median build time (ms)" "$block_ms" "$bg_ms"
printf '%-32s %14s %14s\n' "median submit latency (ms)" "-" "$submit_ms"
printf '%-32s %14s %14s\n' "max oldest-xmin age (xids)" "$(xmax block 1)" "$(xmax bg 1)"
printf '%-32s %14s %14s\n' "max oldest-xmin held (s)" "$(xmax block 2)" "$(xmax bg 2)"
printf '%-32s %14s %14s\n' "progress values seen (min)" "-" \
    "$(for f in "$B"/progress*; do grep -E '^[0-9.]+$' "$f" | sort -u | wc -l; done | sort -n | head -n1)"
printf '%-32s %14s\n' "ratio background/blocking" "$(awk -v a="$bg_ms" -v b="$block_ms" 'BEGIN { printf "%.2f", a / b }')"
echo "OK: in every round both views had equal content (EXCEPT ALL both ways: 0 rows)"
