#!/usr/bin/env bash
# A process of a multi-process cluster killed (SIGKILL) mid-collective
# (docs/processes.md): under hccn-launch, the last process kills itself
# while its ranks wait in an allreduce; every rank of the others fails with
# HCCN_ERR_REMOTE naming the lost process, its ranks and the operation they
# were in, well within the timeout, and hccn-launch exits with 128 + 9.
# The same when the victim dies while the others fetch its bytes
# (killdata). When the host (process 0) is killed, the clients' ranks and runs end
# with HCCN_ERR_REMOTE naming the host.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
prog="$HCCN_BINARY_DIR/tests/procs_check"
launch="$HCCN_BINARY_DIR/hccn-launch"
topo="$HCCN_SOURCE_DIR/configs/default.json"
export HCCN_TIMEOUT=60

# kill_run MODE N: leaves $rc, $secs and every process's lines in $tmp/all.
kill_run() {
    rm -f "$tmp/out".*
    local t0=$SECONDS
    timeout 300 "$launch" -n "$2" -g 30 "$prog" "$topo" "$1" "$tmp/out" \
        >"$tmp/err" 2>&1
    rc=$?
    secs=$((SECONDS - t0))
    cat "$tmp/out".* >"$tmp/all" 2>/dev/null
}

for n in 2 4; do
    kill_run kill "$n"
    first=$((16 - 16 / n))
    [ "$rc" -eq 137 ] || fail "kill -n $n: hccn-launch exit $rc, not 137"
    [ "$secs" -lt 50 ] || fail "kill -n $n: took $secs s (timeout 60)"
    grep -q "process $((n - 1)) (pid [0-9]*) was killed by signal 9" \
        "$tmp/err" || fail "kill -n $n: launcher: $(cat "$tmp/err")"
    want="process $((n - 1)) (ranks $first-15) was lost (its connection closed: it exited or was killed): ranks $first-15 in allreduce #1 on comm 1"
    grep -qF "run kill: HCCN_ERR_REMOTE" "$tmp/all" ||
        fail "kill -n $n: no run result: $(cat "$tmp/all")"
    # Every surviving rank: its first allreduce worked, its second failed
    # naming the lost ranks and their operation.
    for r in $(seq 0 $((first - 1))); do
        rr=$(printf 'r%02d' "$r")
        grep -q "^$rr 000 allreduce .*HCCN_OK" "$tmp/all" ||
            fail "kill -n $n: rank $r: first allreduce"
        grep "^$rr 001 allreduce .*HCCN_ERR_REMOTE" "$tmp/all" |
            grep -qF "$want" || fail "kill -n $n: rank $r: $(grep "^$rr 001" "$tmp/all")"
    done
done

# killdata: the last process dies while every rank is in a 64 MiB
# allreduce whose bytes the other processes fetch from it (a fetch from
# a dead process fails; its process is lost); nothing hangs.
for n in 2 4; do
    kill_run killdata "$n"
    first=$((16 - 16 / n))
    [ "$rc" -eq 137 ] || fail "killdata -n $n: hccn-launch exit $rc, not 137"
    [ "$secs" -lt 50 ] || fail "killdata -n $n: took $secs s (timeout 60)"
    grep -q "^run kill: HCCN_ERR_REMOTE .*process $((n - 1)) (ranks $first-15) was lost" \
        "$tmp/all" || fail "killdata -n $n: run: $(grep '^run' "$tmp/all")"
    for r in $(seq 0 $((first - 1))); do
        rr=$(printf 'r%02d' "$r")
        grep "^$rr 001 allreduce .*HCCN_ERR_REMOTE" "$tmp/all" |
            grep -qF "process $((n - 1)) (ranks $first-15) was lost" ||
            fail "killdata -n $n: rank $r: $(grep "^$rr 001" "$tmp/all")"
    done
done

kill_run killhost 2
[ "$rc" -eq 137 ] || fail "killhost: hccn-launch exit $rc, not 137"
[ "$secs" -lt 50 ] || fail "killhost: took $secs s (timeout 60)"
for r in $(seq 8 15); do
    rr=$(printf 'r%02d' "$r")
    grep -q "^$rr 001 allreduce .*HCCN_ERR_REMOTE .*the host process (process 0) was lost" \
        "$tmp/all" || fail "killhost: rank $r: $(grep "^$rr 001" "$tmp/all")"
done
grep -q "^run kill: HCCN_ERR_REMOTE hccn_cluster_run: process 1 of 2: the host process (process 0) was lost" \
    "$tmp/all" || fail "killhost: run: $(grep '^run' "$tmp/all")"
finish "procs_kill: a killed client or host ends the others' operations with its ranks named"
