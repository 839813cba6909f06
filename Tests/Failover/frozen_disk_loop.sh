#!/usr/bin/env bash
# The instances failover test, looped, with the cluster's data and the kit's state on a
# filesystem that is frozen (fsfreeze: every write and fsync there blocks) 10 s out of
# every 15 while the kit clients run: a disk that stalls, as this project's CI machine's
# did and as a phone's flash can. Not part of the test command: it needs root, a loop
# device and fsfreeze (util-linux), and takes minutes a run. docs/client-kit.md has what
# it showed.
#
#   Tests/Failover/frozen_disk_loop.sh RUNS [LABEL]
#
# ROBOSCOPE_CLIENT_BINARY picks the kit build under test. Results go to
# $OUT/frozen.log (OUT defaults to /tmp/frozen-disk), each run's output and, for a
# failed run, its work folder (outputs, request logs, stacks) next to it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
runs="${1:-4}" label="${2:-run}"
OUT="${OUT:-/tmp/frozen-disk}" MOUNT="${MOUNT:-/mnt/roboscope-frozen}"
mkdir -p "$OUT" "$MOUNT"
if ! mountpoint -q "$MOUNT"; then
    truncate -s 3G "$OUT/disk.img"
    device="$(losetup -f --show "$OUT/disk.img")"
    mkfs.ext4 -q "$device"
    mount "$device" "$MOUNT"
fi
export ROBOSCOPE_LOCAL_DIR="$MOUNT/local" TMPDIR="$MOUNT/tmp"
mkdir -p "$ROBOSCOPE_LOCAL_DIR" "$TMPDIR"
python="${PYTHON:-.local/venv/bin/python}"
for run in $(seq 1 "$runs"); do
    rm -rf "${TMPDIR:?}"/*
    started=$(date +%s)
    "$python" Tests/Failover/instances_failover_test.py >"$OUT/$label-$run.log" 2>&1 &
    test=$!
    (   # The freezer: from the first settled lines on, four rounds of 10 s frozen, 5 s not.
        until first="$(compgen -G "$TMPDIR/*/apply-0.jsonl" | head -1)" && [[ -n $first && $(wc -l <"$first") -ge 5 ]]; do
            kill -0 "$test" 2>/dev/null || exit 0
            sleep 0.5
        done
        for _ in 1 2 3 4; do
            fsfreeze -f "$MOUNT"; echo "frozen $(date +%T)"; sleep 10
            fsfreeze -u "$MOUNT"; echo "thawed $(date +%T)"; sleep 5
            kill -0 "$test" 2>/dev/null || exit 0
        done
    ) >"$OUT/$label-$run.freezer" 2>&1 &
    freezer=$!
    wait "$test"; code=$?
    wait "$freezer"; fsfreeze -u "$MOUNT" 2>/dev/null
    echo "$label run $run: exit $code in $(($(date +%s) - started)) s" >>"$OUT/frozen.log"
    ((code == 0)) || cp -r "$TMPDIR" "$OUT/$label-$run-work"
    deploy/local/cluster down >>"$OUT/cluster-down.log" 2>&1
done
