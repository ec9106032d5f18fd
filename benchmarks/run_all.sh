#!/usr/bin/env bash
# Runs every benchmark in turn and prints each one's ratios and verdicts (PASS, FAIL, or AT THE BAR when
# a pooled ratio's confidence interval holds the target); exits non-zero when any does not pass.
#
#   benchmarks/run_all.sh            full runs (several minutes: state_memory pushes 1 000 000 spans)
#   benchmarks/run_all.sh --quick    smaller batches and fewer rounds (about a minute and a half)
#
# Figures are ratios against a baseline measured in the same run (interleaved rounds, medians), so
# they hold on a shared, noisy machine; see benchmarks/RESULTS.md for the last recorded figures.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
QUICK=()
if [[ "${1:-}" == "--quick" ]]; then
    QUICK=(--quick)
fi

failed=()
run() {
    local name="$1"
    shift
    echo "=== ${name}"
    if ! "$PYTHON" "benchmarks/${name}.py" "$@"; then
        failed+=("$name")
    fi
    echo
}

run span_overhead "${QUICK[@]}"
run stream_breaker "${QUICK[@]}"
run stream_corpus
run real_run_precision --check
run thinking_scaling "${QUICK[@]}"
run thinking_sketch "${QUICK[@]}"
run state_memory "${QUICK[@]}"
run hook_delay "${QUICK[@]}"
if [[ -f benchmarks/analyzer_throughput.py ]]; then
    if [[ ${#QUICK[@]} -gt 0 ]]; then
        run analyzer_throughput --size-mb 20 --small-mb 5 --repeat 3
    else
        run analyzer_throughput
    fi
fi

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "benchmarks that did not pass (FAIL, or AT THE BAR): ${failed[*]}"
    exit 1
fi
echo "every benchmark met its target"
