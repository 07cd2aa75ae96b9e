#!/usr/bin/env bash
# bench/compare.sh -- two builds of the extension (two commits) through the same benchmark,
# alternately in one run, so that a change's effect is measured side by side: round r runs the
# benchmark once (ROUNDS=1) with build A installed, then with build B (in the other order every
# other round), each time on a fresh throwaway cluster.  From each run's output it takes one
# number: field FIELD (default: the last) of the first line that matches METRIC (an extended
# regular expression; default the ratio line of mv_build.sh, speed.sh, agg_build.sh and
# writer_overhead.sh: a ratio of the background build to the blocking statement, measured in
# the same run, so that a slower or faster hour affects both builds alike).  Prints every
# round's numbers, the medians, and B's median over A's.
#
# The benchmark script is this tree's for both builds (the same measurement); only the installed
# extension differs.  Each commit is built from `git archive` in a scratch directory; at the end
# this tree's build is installed again.  Needs root, as the benchmarks' throwaway clusters do.
#
# Usage: bench/compare.sh REV_A REV_B BENCH [BENCH_ARGS...]
#   e.g. ROUNDS=5 bench/compare.sh main HEAD bench/agg_build.sh 2000000
#        METRIC='^CREATE INDEX, background job' FIELD=6 bench/compare.sh main HEAD bench/kinds.sh
#   (env ROUNDS, default 3; METRIC, FIELD; the benchmark's own variables pass through)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

[ $# -ge 3 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/compare.sh installs builds: run it as root" >&2; exit 2; }
REV_A=$1 REV_B=$2 BENCH=$3
shift 3
ROUNDS=${ROUNDS:-3}
METRIC=${METRIC:-'ratio background/blocking'}
FIELD=${FIELD:-NF}
BENCH=$(cd "$(dirname "$BENCH")" && pwd)/$(basename "$BENCH")
[ -f "$BENCH" ] || { echo "no benchmark $BENCH" >&2; exit 2; }

W=$(mktemp -d /tmp/background_ddl-compare.XXXXXX)
reinstall() {
    echo "== installing this tree's build again"
    build_install >/dev/null || echo "could not install this tree's build" >&2
    rm -rf "$W"
}
trap reinstall EXIT

ensure_packages
for tag in A B; do
    rev=$([ $tag = A ] && echo "$REV_A" || echo "$REV_B")
    commit=$(git -C "$REPO" rev-parse --short "$rev^{commit}")
    echo "== build $tag: $rev ($commit)"
    mkdir -p "$W/$tag"
    git -C "$REPO" archive "$commit" | tar -x -C "$W/$tag"
    make -s -C "$W/$tag" COPT=-Werror >/dev/null
done

: >"$W/results"
for round in $(seq "$ROUNDS"); do
    order="A B"
    [ $((round % 2)) = 0 ] && order="B A"
    for tag in $order; do
        make -s -C "$W/$tag" install >/dev/null
        log=$W/$tag.$round.log
        ROUNDS=1 BENCH_NO_BUILD=1 bash "$BENCH" "$@" >"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
        value=$(awk -v f="$FIELD" -v re="$METRIC" '$0 ~ re { print (f == "NF" ? $NF : $f); exit }' "$log")
        [ -n "$value" ] || { echo "no line matching '$METRIC' in the output:" >&2; tail -n 20 "$log"; exit 1; }
        echo "$tag $round $value" >>"$W/results"
        echo "== round $round, build $tag: $value"
    done
done

pick() { awk -v t="$1" '$1 == t { print $3 }' "$W/results" | median; }
a=$(pick A) b=$(pick B)
echo
echo "$(basename "$BENCH") $*: '$METRIC', medians of $ROUNDS rounds"
printf '%-6s %-24s %10s\n' build commit median
printf '%-6s %-24s %10s\n' A "$REV_A" "$a" B "$REV_B" "$b"
printf '%-31s %10s\n' "B / A" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
