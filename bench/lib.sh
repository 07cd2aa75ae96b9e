# bench/lib.sh -- what the benchmarks share, sourced by each of them (after scripts/lib.sh).
#
#   bench_server CONF...      the server to measure, with $B a private directory for the run's files:
#                             as root, a throwaway cluster of this tree's build (built and installed
#                             first, unless BENCH_NO_BUILD is set: then of the build installed, as
#                             bench/compare.sh runs it) with the postgresql.conf lines CONF; with BENCH_INSTALLED=1 (or
#                             when not root), the running server that the PG* variables name: the
#                             run gets a scratch database there (dropped at exit), CONF's settings
#                             that a session may set are set on it, the others are listed with the
#                             server's value, which applies. The server must preload background_ddl;
#                             the role needs CREATEDB and pg_checkpoint (or superuser).
#   bench_background SQL      run SQL with background_ddl on (a statement that becomes a job), and
#                             wait for the job with CALL await_ddl (one session, which holds no
#                             snapshot while it sleeps; polling from new psql processes would take
#                             a good part of a core from the job); prints the job id, fails unless
#                             the job succeeded
#   bench_background_ms SQL   the same; prints the job's build time (submitted to finished) in ms
#   bench_fill_events ROWS    (re)create events(id, account, payload) with ROWS rows, analyzed
#   bench_writes_setup ROWS [PARTITIONS]  the extension, events(id bigserial, account, payload)
#                             of ROWS rows, account of ACCOUNTS values (default 1,000) in turn
#                             (fillfactor 90; with PARTITIONS, that many hash
#                             partitions of it), and $B/writes.sql: pgbench's script that updates
#                             a random row and inserts one
#   bench_col MODE FIELD      the median of field FIELD of the lines of $B/results that start with MODE
#   bench_colmax MODE FIELD   the largest of them
#   bench_writer NAME ARGS... start pgbench ARGS in $B in the background (output in $B/NAME.out),
#                             until bench_writers_stop or the end of the run
#   bench_writers_stop        stop them all
#   median                    the median of the numbers on stdin, one per line
#   timing_ms                 the first "Time: N ms" of psql's \timing output on stdin, in ms

# The settings most benchmarks measure under (bench_server "${BENCH_CONF[@]}" ...): enough shared
# buffers for the tables, no checkpoint and no autovacuum in the middle of a build
BENCH_CONF=("shared_buffers = 1GB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" "autovacuum = off")

BENCH_WRITERS=()
BENCH_DATABASE=

bench_server() {
    trap bench_end EXIT
    if [ "$(id -u)" = 0 ] && [ -z "${BENCH_INSTALLED:-}" ]; then
        ensure_packages
        [ -n "${BENCH_NO_BUILD:-}" ] || build_install
        cluster_start "$@"
        B=$CLUSTER_DIR
        return
    fi
    local line name value
    B=$(mktemp -d /tmp/background_ddl-bench.XXXXXX)
    sql -d "${PGDATABASE:-postgres}" -c "SHOW shared_preload_libraries" | grep -qw background_ddl ||
        { echo "the server does not preload background_ddl (shared_preload_libraries)" >&2; exit 1; }
    BENCH_DATABASE=bench_$$
    echo "== measuring the running server $(sql -d "${PGDATABASE:-postgres}" -c "SELECT version()" | cut -d, -f1), database $BENCH_DATABASE"
    sql -d "${PGDATABASE:-postgres}" -q -c "CREATE DATABASE $BENCH_DATABASE"
    export PGDATABASE=$BENCH_DATABASE
    for line in "$@"; do
        [ -n "$line" ] || continue
        name=$(sed -E 's/^ *([a-z_.]+) *=.*/\1/' <<<"$line")
        value=$(sed -E "s/^[^=]*= *'?([^']*)'? *$/\1/" <<<"$line")
        if [ "$(sql -c "SELECT context IN ('user', 'superuser') FROM pg_settings WHERE name = '$name'")" = t ]; then
            sql -q -c "ALTER DATABASE $BENCH_DATABASE SET $name = '$value'"
        else
            echo "   not set (the server's applies): $line (server: $(sql -c "SHOW $name" 2>/dev/null || echo '?'))"
        fi
    done
}

bench_end() {
    bench_writers_stop
    if [ -n "$BENCH_DATABASE" ]; then
        sql -d postgres -q -c "DROP DATABASE IF EXISTS $BENCH_DATABASE WITH (FORCE)" || true
        rm -rf "$B"
        BENCH_DATABASE=
    else
        cluster_stop
    fi
}

# Submit a statement as a job and wait for its end, in one session (as the blocking statement
# runs in one: a caller that times this call times one connection, not three); prints the job
bench_background() {
    local out job state
    out=$(sql -q -c "SET background_ddl = on" -c "$1" -c "SELECT last_ddl_job()" \
              -c "CALL await_ddl(last_ddl_job(), '2 hours')" \
              -c "SELECT state FROM pg_stat_background_ddl WHERE id = last_ddl_job()")
    job=$(sed -n 1p <<<"$out")
    state=$(sed -n 2p <<<"$out")
    [[ "$job" =~ ^[0-9]+$ ]] || { echo "submit failed: $1" >&2; exit 1; }
    # (a job that did not succeed ends the session at the await)
    [ -n "$state" ] || state=$(sql -c "SELECT state FROM pg_stat_background_ddl WHERE id = $job")
    if [ "$state" != succeeded ]; then
        sql -c "SELECT 'job $job $state: ' || coalesce(error, '') FROM pg_stat_background_ddl WHERE id = $job" >&2
        exit 1
    fi
    echo "$job"
}

bench_background_ms() {
    local job
    job=$(bench_background "$1") || exit 1
    sql -c "SELECT round(extract(epoch FROM finished_at - submitted_at) * 1000, 1)
              FROM pg_stat_background_ddl WHERE id = $job"
}

bench_fill_events() {
    echo "== loading $1 rows into events"
    sql -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS events CASCADE" \
        -c "CREATE TABLE events AS SELECT g AS id, g % 1000 AS account, md5(g::text) AS payload
            FROM generate_series(1, $1) g" \
        -c "VACUUM ANALYZE events"
}

bench_writes_setup() {
    local partitions=${2:-0}
    echo "== loading $1 rows into events${2:+ ($2 hash partitions)}"
    if [ "$partitions" -gt 0 ]; then
        sql -q -c "CREATE EXTENSION background_ddl" \
            -c "CREATE TABLE events (id bigserial PRIMARY KEY, account int NOT NULL, payload text NOT NULL)
                PARTITION BY HASH (id)"
        for i in $(seq 0 $((partitions - 1))); do
            sql -q -c "CREATE TABLE events_$i PARTITION OF events
                         FOR VALUES WITH (MODULUS $partitions, REMAINDER $i) WITH (fillfactor = 90)"
        done
    else
        sql -q -c "CREATE EXTENSION background_ddl" \
            -c "CREATE TABLE events (id bigserial PRIMARY KEY, account int NOT NULL, payload text NOT NULL)
                WITH (fillfactor = 90)"
    fi
    sql -q -c "INSERT INTO events (account, payload)
                 SELECT g % ${ACCOUNTS:-1000}, md5(g::text) FROM generate_series(1, $1) g" \
        -c "VACUUM ANALYZE events"
    cat >"$B/writes.sql" <<EOS
\\set id random(1, $1)
\\set acc random(0, $((${ACCOUNTS:-1000} - 1)))
UPDATE events SET payload = md5(random()::text) WHERE id = :id;
INSERT INTO events (account, payload) VALUES (:acc, 'new');
EOS
}

# Sample every $2 seconds (default 0.02), until bench_snapshot_stop, how long the statement's
# processes have held a snapshot: the longest open transaction with an xmin of a background_ddl
# worker or of a session named bench_build (PGAPPNAME), one line per sample into file $1; one psql
# session (\watch).  Each sample is a query that takes its share of the CPU.  With $3, the
# largest of that expression over those processes instead (age(backend_xmin): how many
# transactions behind the VACUUM horizon they hold; a statement that commits inside, as CREATE
# INDEX CONCURRENTLY, keeps its statement's start as xact_start, so the time overstates it).
bench_snapshot_start() {
    (exec "$PGBIN/psql" -X -At >"$1" 2>/dev/null <<<"SELECT coalesce(max(${3:-extract(epoch FROM clock_timestamp() - xact_start)}), 0)
          FROM pg_stat_activity
         WHERE backend_xmin IS NOT NULL AND xact_start IS NOT NULL
           AND (backend_type = 'background_ddl worker' OR application_name = 'bench_build') \\watch ${2:-0.02}") &
    BENCH_SAMPLER=$!
}

# Stop the sampler (SIGINT ends psql's \watch, and psql) started with file $1; the longest time it
# saw (s) in BENCH_SNAPSHOT_HELD.  Not in a subshell: it waits for its child.
bench_snapshot_stop() {
    kill -INT "$BENCH_SAMPLER" 2>/dev/null || true
    wait "$BENCH_SAMPLER" 2>/dev/null || true
    BENCH_SNAPSHOT_HELD=$(sort -g "$1" | tail -n1)
}

# Writers that a build's measure starts and stops (bench_writes_setup first): bench_stoppable_writes
# makes writes.sql end its clients (pgbench then ends, its per-transaction log complete) once
# bench_stop has a row; bench_logged_writers_start CLIENTS starts them (none if 0), logging every
# transaction; bench_logged_writers_stop T0_NS T1_NS stops them and sets BENCH_LONGEST_WRITE to the
# longest write (ms) that ended between the two times (date +%s%N), 0 without writers.  Not in a
# subshell: it waits for its children.
bench_stoppable_writes() {
    sql -q -c "CREATE TABLE bench_stop (x int)"
    echo 'SELECT 1 / (1 - count(*))::int FROM bench_stop;' >>"$B/writes.sql"
}

bench_logged_writers_start() {
    sql -q -c "TRUNCATE bench_stop"
    rm -f "$B"/pgbench_log.*
    [ "$1" -gt 0 ] || return 0
    bench_writer writers -n -c "$1" -j 2 -T 3600 -f writes.sql -l --log-prefix=pgbench_log
    sleep 2
}

bench_logged_writers_stop() {
    local pid
    BENCH_LONGEST_WRITE=0
    [ ${#BENCH_WRITERS[@]} -gt 0 ] || return 0
    sql -q -c "INSERT INTO bench_stop VALUES (1)"
    for pid in "${BENCH_WRITERS[@]}"; do wait "$pid" 2>/dev/null || true; done
    BENCH_WRITERS=()
    # per-transaction log: client tx latency_us script epoch_s epoch_us (end of the transaction)
    BENCH_LONGEST_WRITE=$(cat "$B"/pgbench_log.* | awk -v t0="$1" -v t1="$2" '
        { end_ns = ($5 * 1000000 + $6) * 1000
          if (end_ns >= t0 && end_ns <= t1 && $3 > max) max = $3 }
        END { printf "%.1f", max / 1000 }')
}

bench_col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$B/results" | median; }
bench_colmax() { awk -v m="$1" -v c="$2" '$1 == m && $c + 0 > x { x = $c + 0 } END { print x }' "$B/results"; }

bench_writer() {
    local name=$1; shift
    (cd "$B" && exec "$PGBIN/pgbench" "$@" >"$B/$name.out" 2>&1) &
    BENCH_WRITERS+=($!)
}

bench_writers_stop() {
    local pid
    for pid in "${BENCH_WRITERS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    BENCH_WRITERS=()
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

timing_ms() { sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | head -n1; }
