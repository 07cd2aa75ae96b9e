#!/usr/bin/env bash
# bench/agg_build.sh -- benchmark (not a test): an aggregating materialized view, built in the
# background (partial aggregation in chunks, default settings) against the blocking statement
# (default settings: parallel query on).  Runs bench/mv_build.sh with an aggregating query: a fresh
# cluster, ROUNDS rounds alternating the order, medians, both views compared in every round, and
# how many distinct progress values the view showed during each background build.
#
# Usage: bench/agg_build.sh [ROWS]     (default 5000000; ROUNDS, default 3)
set -euo pipefail
export QUERY=${QUERY:-"SELECT account, count(*) AS n, sum(id) AS total, avg(id) AS mean,
                              min(payload) AS first, max(payload) AS last
                         FROM events GROUP BY account"}
exec bash "$(dirname "$0")/mv_build.sh" "${1:-5000000}"
