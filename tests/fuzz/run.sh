#!/usr/bin/env bash
# Builds a fuzz target with clang (libFuzzer + ASan + UBSan) and runs it for
# SECONDS (default 300) on a seed corpus. TARGET (default topo):
#   topo        the topology loader; seeds configs/*.json, tests/data/topo_invalid
#   nccl-xml, hccl-ranktable, nvidia-smi, astrasim, simgrid
#               the importers of hccn-topo import; seeds tests/data/import
# Needs Debian's clang and libclang-rt-14-dev (installed if missing). A crash
# leaves crash-* files in the work directory and exits non-zero.
#   tests/fuzz/run.sh [SECONDS] [TARGET]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-300}
target=${2:-topo}
work=${FUZZ_DIR:-$src/build-fuzz}
for p in clang libclang-rt-14-dev libjson-c-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q clang libclang-rt-14-dev libjson-c-dev
        break
    }
done
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -D_GNU_SOURCE -I"$src" -I"$src/include")
corpus="$work/corpus-$target"
mkdir -p "$corpus"
case "$target" in
    topo)
        cp "$src"/configs/*.json "$src"/tests/data/topo_invalid/*.json "$corpus/"
        srcs=("$src/tests/fuzz/fuzz_topo.c") ;;
    nccl-xml|hccl-ranktable|nvidia-smi|astrasim|simgrid)
        case "$target" in
            nccl-xml) n=0 seeds="nccl_*.xml" ;;
            hccl-ranktable) n=1 seeds="ranktable_*.json" ;;
            nvidia-smi) n=2 seeds="nvsmi_*.txt" ;;
            astrasim) n=3 seeds="astrasim_*.yml" ;;
            simgrid) n=4 seeds="simgrid_*.xml" ;;
        esac
        # shellcheck disable=SC2086
        cp "$src"/tests/data/import/$seeds "$corpus/"
        flags+=(-DIMP_FORMAT="$n")
        imp=()
        for f in "$src"/tools/import/*.c; do
            # the command line, hwloc, and the public-API loader (the
            # target loads through the internal one itself) stay out
            case "$f" in */imp_cli.c|*/detect.c|*/imp_load.c) ;; *) imp+=("$f") ;; esac
        done
        srcs=("$src/tests/fuzz/fuzz_import.c" "${imp[@]}") ;;
    *) echo "run.sh: unknown target '$target'" >&2; exit 2 ;;
esac
clang "${flags[@]}" "${srcs[@]}" "$src"/device_sim/topo*.c \
    $(pkg-config --cflags --libs json-c) -lm -o "$work/fuzz_$target"
cd "$work"
"./fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 "$corpus"
