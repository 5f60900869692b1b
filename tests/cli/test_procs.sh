#!/usr/bin/env bash
# One cluster across processes (docs/processes.md): tests/procs/procs_check
# runs every collective and dtype group, async ops, a group, splits, a
# deliberate mismatch and a fault plan (a link down, routed round; a
# failed NPU; a straggler); its
# lines (each op's status, simulated duration and end in %a, a digest of
# the rank's buffers, the error messages) must be the one-process run's,
# byte for byte, under hccn-launch -n 2, 4, 16 and mpirun -np 2, 3, 4
# (when libhccn is built with Open MPI), with the data partitioned: each
# process's peak memory is its ranks' share. hccn-perf prints the same table
# (wall time aside) under both. Python's Cluster runs fn for its ranks.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
prog="$HCCN_BINARY_DIR/tests/procs_check"
launch="$HCCN_BINARY_DIR/hccn-launch"
perf="$HCCN_BINARY_DIR/hccn-perf"
topo="$HCCN_SOURCE_DIR/configs/default.json"
export HCCN_TIMEOUT=120
# (hccn-launch's cases keep leak detection under AddressSanitizer.)
mpirun_sanitized

[ -x "$prog" ] && [ -x "$launch" ] || { echo "FAIL: not built" >&2; exit 1; }

# run NAME LAUNCHER...: runs procs_check under LAUNCHER; $tmp/NAME holds
# every process's lines, sorted.
run() {
    local name=$1
    shift
    rm -f "$tmp/out".*
    timeout 600 "$@" "$prog" "$topo" all "$tmp/out" >"$tmp/err" 2>&1
    local rc=$?
    [ "$rc" -eq 0 ] || fail "$name: exit $rc: $(head -c 2000 "$tmp/err")"
    cat "$tmp/out".* 2>/dev/null | LC_ALL=C sort >"$tmp/$name"
}

run one env
lines=$(wc -l <"$tmp/one")
# 16 ranks x 64 ops, and the two runs' results
[ "$lines" -eq $((16 * 64 + 2)) ] || fail "one process: $lines lines"
grep -q "^run all: HCCN_OK$" "$tmp/one" || fail "one process: run all failed"
grep -q "mismatch .*HCCN_ERR_MISMATCH .*rank 0 called allreduce(count=8" \
    "$tmp/one" || fail "one process: no mismatch report"
grep -q "fault.allreduce .*NPU 9 failed at" "$tmp/one" ||
    fail "one process: no fault report"

compare() {
    if ! cmp -s "$tmp/one" "$tmp/$1"; then
        fail "$1: differs from one process: $(diff "$tmp/one" "$tmp/$1" | head -5 | cut -c1-300)"
    fi
}
for n in 2 4 16; do
    run "launch$n" "$launch" -n "$n"
    compare "launch$n"
done
if [ "${HCCN_TEST_MPI:-OFF}" = ON ] && command -v mpirun >/dev/null; then
    for n in 2 3 4; do
        run "mpi$n" "${mpirun[@]}" -np "$n"
        compare "mpi$n"
    done
else
    echo "mpirun cases skipped: libhccn built without Open MPI"
fi

# Partitioned data: a process backs only its own ranks' arenas. 16 ranks
# x 32 MiB allreduced in place (512 MiB; the sums checked against the
# closed form): one process's peak resident set holds all of it; under
# hccn-launch -n 4 every process's, the host's too, stays under half of
# it, which a process holding (or touching) every rank's bytes could not.
# Under a sanitizer the resident set counts its shadow and quarantine:
# the sums are checked, the sizes not (and not under ThreadSanitizer, too
# slow for 512 MiB; procs_kill's killdata moves 1 GiB under it).
mem_run() {
    local name=$1
    shift
    rm -f "$tmp/out".*
    timeout 600 "$@" "$prog" "$topo" mem "$tmp/out" >"$tmp/err" 2>&1 ||
        fail "mem $name: exit $?: $(head -c 2000 "$tmp/err")"
    cat "$tmp/out".* >"$tmp/mem_$name"
    [ "$(grep -c '^r[0-9]* mem HCCN_OK 0 wrong$' "$tmp/mem_$name")" -eq 16 ] ||
        fail "mem $name: wrong sums: $(grep -v 'HCCN_OK 0 wrong' "$tmp/mem_$name" | head -3)"
}
data_kib=$((16 * 32 * 1024))
if [ "${HCCN_TEST_SANITIZE:-}" != thread ]; then
    mem_run one env
    mem_run launch4 "$launch" -n 4
fi
if [ -z "${HCCN_TEST_SANITIZE:-}" ]; then
    one_kib=$(awk '/^proc 0 peak_rss_kib/ { print $4 }' "$tmp/mem_one")
    [ "$one_kib" -ge "$data_kib" ] ||
        fail "mem: one process peaks at $one_kib KiB, under the data's $data_kib"
    [ "$(grep -c '^proc [0-3] peak_rss_kib' "$tmp/mem_launch4")" -eq 4 ] ||
        fail "mem: not 4 processes: $(cat "$tmp/mem_launch4")"
    while read -r _ q _ kib; do
        [ "$kib" -lt $((data_kib / 2)) ] ||
            fail "mem: process $q of 4 peaks at $kib KiB: not partitioned (data $data_kib KiB)"
    done < <(grep '^proc ' "$tmp/mem_launch4")
fi

# hccn-perf: the same rows, the wall column (the last) aside.
rows() { grep -v '^#' "$1" | awk '{ $NF = ""; print }'; }
perf_args=(allreduce -t "$topo" -b 1K -e 1M -f 32 -n 2 -w 1)
"$perf" "${perf_args[@]}" >"$tmp/perf1" 2>&1 || fail "hccn-perf: exit $?"
timeout 600 "$launch" -n 4 "$perf" "${perf_args[@]}" >"$tmp/perf4" 2>&1 ||
    fail "hccn-perf under hccn-launch: exit $?: $(head -c 500 "$tmp/perf4")"
[ "$(rows "$tmp/perf1")" = "$(rows "$tmp/perf4")" ] ||
    fail "hccn-perf under hccn-launch -n 4: other rows"
[ "$(rows "$tmp/perf1" | wc -l)" -eq 3 ] || fail "hccn-perf: not 3 rows"
if [ "${HCCN_TEST_MPI:-OFF}" = ON ] && command -v mpirun >/dev/null; then
    timeout 600 "${mpirun[@]}" -np 3 "$perf" "${perf_args[@]}" \
        >"$tmp/perfm" 2>&1 || fail "hccn-perf under mpirun: exit $?"
    [ "$(rows "$tmp/perf1")" = "$(rows "$tmp/perfm")" ] ||
        fail "hccn-perf under mpirun -np 3: other rows"
fi

# Python: Cluster(proc_rank=, proc_world=, rendezvous=) and run(fn) for the
# process's own ranks (no sanitizer runtime in the interpreter).
if [ -z "${HCCN_TEST_SANITIZE:-}" ]; then
    cat >"$tmp/p.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["HCCN_SOURCE_DIR"], "python"))
import numpy as np
import hccn
me, world = int(sys.argv[1]), int(sys.argv[2])
cl = hccn.Cluster("configs/laptop-4.json", proc_rank=me, proc_world=world,
                  rendezvous=sys.argv[3])
def f():
    hccn.init()
    g = hccn.Tensor(np.full(64, hccn.get_rank() + 1.0, np.float32))
    hccn.allreduce(g)
    return float(g.cpu().numpy()[0]), hccn.time().hex()
res = cl.run(f)
print(me, cl.proc_world, cl.local_ranks,
      [r for r in res if r is not None])
cl.close()
PY
    py=/usr/bin/python3
    "$py" "$tmp/p.py" 0 1 "" >"$tmp/py1" 2>&1 || fail "python: $(cat "$tmp/py1")"
    mkdir "$tmp/rv"
    "$py" "$tmp/p.py" 1 2 "$tmp/rv" >"$tmp/pyb" 2>&1 &
    "$py" "$tmp/p.py" 0 2 "$tmp/rv" >"$tmp/pya" 2>&1 ||
        fail "python process 0: $(cat "$tmp/pya")"
    wait $! || fail "python process 1: $(cat "$tmp/pyb")"
    t=$(sed -n "s/.*'\(0x[^']*\)'.*/\1/p" "$tmp/py1" | head -1)
    grep -q "^0 2 \[0, 1\] \[(10.0, '$t'), (10.0, '$t')\]$" "$tmp/pya" ||
        fail "python process 0: $(cat "$tmp/pya")"
    grep -q "^1 2 \[2, 3\] \[(10.0, '$t'), (10.0, '$t')\]$" "$tmp/pyb" ||
        fail "python process 1: $(cat "$tmp/pyb")"
fi
# Bad layouts: a clear error naming what is wrong, exit 1, no hang.
# expect_err TEXT ENV...: procs_check with ENV fails saying TEXT.
expect_err() {
    local text=$1
    shift
    if timeout 60 env "$@" "$prog" "$topo" all >"$tmp/bad" 2>&1; then
        fail "$*: exit 0"
    fi
    grep -qF "$text" "$tmp/bad" || fail "$*: $(cat "$tmp/bad")"
}
expect_err "HCCN_PROC_WORLD=2 without HCCN_PROC_RANK" HCCN_PROC_WORLD=2
expect_err "HCCN_PROC_WORLD=x is not a count" HCCN_PROC_WORLD=x HCCN_PROC_RANK=0
expect_err "process rank 2 is out of range [0, 2)" HCCN_PROC_WORLD=2 HCCN_PROC_RANK=2
expect_err "process 1 of 2 has no rendezvous directory" HCCN_PROC_WORLD=2 HCCN_PROC_RANK=1
expect_err "HCCN_PROC_RANK=1 without HCCN_PROC_WORLD" HCCN_PROC_RANK=1
expect_err "process rank 7 is out of range [0, 1)" HCCN_PROC_WORLD=1 HCCN_PROC_RANK=7
expect_err "HCCN_PROC_RANK=-1 is not a count" HCCN_PROC_WORLD=2 HCCN_PROC_RANK=-1
expect_err "HCCN_PROC_WORLD=99999999999999999999 is not a count" \
    HCCN_PROC_WORLD=99999999999999999999 HCCN_PROC_RANK=0
expect_err "20 processes for 16 NPUs" HCCN_PROC_WORLD=20 HCCN_PROC_RANK=0 \
    HCCN_RENDEZVOUS="$tmp/rv20"
mkdir "$tmp/rv3"
expect_err "process(es) 1, 2 of 3 did not join within 2 s" HCCN_TIMEOUT=2 \
    HCCN_PROC_WORLD=3 HCCN_PROC_RANK=0 HCCN_RENDEZVOUS="$tmp/rv3"
# A client killed while the others join: the host says so at once.
mkdir "$tmp/rvk"
HCCN_TIMEOUT=60 HCCN_PROC_WORLD=3 HCCN_PROC_RANK=1 HCCN_RENDEZVOUS="$tmp/rvk" \
    timeout -s KILL 1 "$prog" "$topo" all >/dev/null 2>&1 &
t0=$SECONDS
expect_err "process 1 of 3 went away while joining" HCCN_TIMEOUT=60 \
    HCCN_PROC_WORLD=3 HCCN_PROC_RANK=0 HCCN_RENDEZVOUS="$tmp/rvk"
[ $((SECONDS - t0)) -lt 30 ] || fail "a client lost while joining: not seen at once"
wait
# A client that loaded another topology: both sides say so.
mkdir "$tmp/rvt"
HCCN_TIMEOUT=20 HCCN_PROC_WORLD=2 HCCN_PROC_RANK=1 HCCN_RENDEZVOUS="$tmp/rvt" \
    "$prog" "$HCCN_SOURCE_DIR/configs/laptop-4.json" all >"$tmp/badc" 2>&1 &
expect_err "process 1 loaded another topology than the host's (4 NPUs" \
    HCCN_TIMEOUT=20 HCCN_PROC_WORLD=2 HCCN_PROC_RANK=0 HCCN_RENDEZVOUS="$tmp/rvt"
wait $! && fail "client of another topology: exit 0"
grep -qF "loaded another topology than the host's" "$tmp/badc" ||
    fail "client of another topology: $(cat "$tmp/badc")"
"$launch" >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "usage: hccn-launch -n P" "$tmp/bad" ||
    fail "hccn-launch without arguments: $(cat "$tmp/bad")"
"$launch" -n 0 true >"$tmp/bad" 2>&1
[ $? -eq 2 ] || fail "hccn-launch -n 0: not exit 2"
# shellcheck disable=SC2016
"$launch" -n 3 sh -c '[ "$HCCN_PROC_RANK" -eq 0 ] || exit 3' >"$tmp/bad" 2>&1
[ $? -eq 3 ] || fail "hccn-launch: the failure's code is not forwarded"

finish "procs: identical lines for 1 process, hccn-launch -n 2/4/16 and mpirun -np 2/3/4; each process holds its ranks' share of the data"
