#!/usr/bin/env bash
# Builds the topology-loader fuzz target with clang (libFuzzer + ASan +
# UBSan) and runs it for SECONDS (default 300) on a seed corpus made of
# configs/*.json and tests/data/topo_invalid/*.json. Needs Debian's clang and
# libclang-rt-14-dev (installed if missing). A crash leaves crash-* files in
# the work directory and exits non-zero.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-300}
work=${FUZZ_DIR:-$src/build-fuzz}
for p in clang libclang-rt-14-dev libjson-c-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q clang libclang-rt-14-dev libjson-c-dev
        break
    }
done
mkdir -p "$work/corpus"
cp "$src"/configs/*.json "$src"/tests/data/topo_invalid/*.json "$work/corpus/"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -D_GNU_SOURCE -I"$src" -I"$src/include" \
    "$src/tests/fuzz/fuzz_topo.c" "$src"/device_sim/topo*.c \
    $(pkg-config --cflags --libs json-c) -lm -o "$work/fuzz_topo"
cd "$work"
./fuzz_topo -max_total_time="$seconds" -max_len=65536 -timeout=10 corpus
