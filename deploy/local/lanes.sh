#!/usr/bin/env bash
# Sourced, not run (deploy/local/test, deploy/local/bench): steps side by side.
#   side_by_side LABEL FUNCTION...
# Runs each named function in the background, its output to a log of its own in
# .local/lanes/, and prints each log whole once its lane has ended, under
# "LABEL ---- lane FUNCTION (exit N) ----"; fails (after all have ended) if any lane
# failed. Call it outside a condition: a function called in one runs without `set -e`,
# and the lanes stop at their first failing step because they have it.
side_by_side() {
    local label=$1
    shift
    local logs="${ROBOSCOPE_LOCAL_DIR:-$REPO/.local}/lanes" pids=() lane index status=0 lane_status
    local started=$SECONDS
    mkdir -p "$logs"
    for lane in "$@"; do
        "$lane" >"$logs/$lane.log" 2>&1 &
        pids+=($!)
    done
    for index in "${!pids[@]}"; do
        lane="${*:index+1:1}"
        lane_status=0
        wait "${pids[index]}" || lane_status=$?
        echo "$label ---- lane $lane (exit $lane_status) ----" >&2
        cat "$logs/$lane.log" >&2
        ((lane_status == 0)) || status=$lane_status
    done
    echo "$label [$((SECONDS - started)) s, $SECONDS s in all] side by side: $*" >&2
    return "$status"
}
