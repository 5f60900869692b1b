#!/usr/bin/env bash
# The main job: sets everything up, then runs a 16-rank fp32 sum allreduce
# sweep from 8 B to 256 MiB on configs/default.json and prints the table
# (simulated time, algbw, busbw, the check, and the simulation's wall time).
# Extra arguments go to hccn-perf (e.g. -e 16M for a shorter sweep).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$src/scripts/setup.sh" hccn-perf      # only what this job runs; test.sh builds the tests
build=${BUILD_DIR:-$src/build}
cd "$src"
exec "$build/hccn-perf" allreduce -t configs/default.json -b 8 -e 256M -f 2 \
    -n 2 -w 1 -c 1 "$@"
