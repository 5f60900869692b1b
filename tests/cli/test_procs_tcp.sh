#!/usr/bin/env bash
# One cluster across processes over TCP (docs/processes.md), on loopback:
# procs_check's lines (each op's status, simulated duration and end, a
# digest of every rank's buffers, the error messages) must be the
# one-process run's, byte for byte, with the lines over TCP: processes
# started by hand with HCCN_RENDEZVOUS=tcp:127.0.0.1:PORT (one names its
# data address with HCCN_ADDR), hccn-launch with HCCN_TRANSPORT=tcp, and
# mpirun -np 2/4 with HCCN_TRANSPORT=tcp (when built with Open MPI). A
# process killed mid-collective ends the others with an error naming its
# ranks, within the timeout. Bad TCP rendezvous values are refused,
# naming the variable and its value.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
prog="$HCCN_BINARY_DIR/tests/procs_check"
launch="$HCCN_BINARY_DIR/hccn-launch"
topo="$HCCN_SOURCE_DIR/configs/default.json"
export HCCN_TIMEOUT=120
mpirun_sanitized -x HCCN_TRANSPORT=tcp -x HCCN_DEBUG=INFO
[ -x "$prog" ] && [ -x "$launch" ] || { echo "FAIL: not built" >&2; exit 1; }

# A port of 127.0.0.1 that is free now.
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# collect NAME: every process's lines, sorted, into $tmp/NAME; the logs
# must say every process joined over TCP (N of them).
collect() {
    cat "$tmp/out".* 2>/dev/null | LC_ALL=C sort >"$tmp/$1"
    cmp -s "$tmp/one" "$tmp/$1" ||
        fail "$1: differs from one process: $(diff "$tmp/one" "$tmp/$1" | head -5 | cut -c1-300)"
    local joined
    joined=$(grep -c "^hccn INFO process [0-9]* of $2 joined over TCP" "$tmp/err")
    [ "$joined" -ge "$2" ] || fail "$1: $joined processes joined over TCP, not $2"
}

rm -f "$tmp/out".*
timeout 600 "$prog" "$topo" all "$tmp/out" >"$tmp/err" 2>&1 ||
    fail "one process: exit $?: $(head -c 2000 "$tmp/err")"
cat "$tmp/out".* | LC_ALL=C sort >"$tmp/one"
[ "$(wc -l <"$tmp/one")" -eq $((16 * 64 + 2)) ] || fail "one process: lines"

# By hand: tcp:127.0.0.1:PORT; process 1 names its address (HCCN_ADDR).
rm -f "$tmp/out".*
port=$(free_port)
HCCN_DEBUG=INFO HCCN_ADDR=127.0.0.1 HCCN_PROC_WORLD=2 HCCN_PROC_RANK=1 \
    HCCN_RENDEZVOUS="tcp:127.0.0.1:$port" timeout 600 \
    "$prog" "$topo" all "$tmp/out" >"$tmp/err1" 2>&1 &
HCCN_DEBUG=INFO HCCN_PROC_WORLD=2 HCCN_PROC_RANK=0 \
    HCCN_RENDEZVOUS="tcp:127.0.0.1:$port" timeout 600 \
    "$prog" "$topo" all "$tmp/out" >"$tmp/err" 2>&1 ||
    fail "tcp by hand, process 0: exit $?: $(grep -v INFO "$tmp/err" | head -c 2000)"
wait $! || fail "tcp by hand, process 1: exit $?: $(grep -v INFO "$tmp/err1" | head -c 2000)"
cat "$tmp/err1" >>"$tmp/err"
collect hand2 2

rm -f "$tmp/out".*
HCCN_DEBUG=INFO HCCN_TRANSPORT=tcp timeout 600 "$launch" -n 4 \
    "$prog" "$topo" all "$tmp/out" >"$tmp/err" 2>&1 ||
    fail "hccn-launch -n 4 over TCP: exit $?: $(grep -v INFO "$tmp/err" | head -c 2000)"
collect launch4 4

if [ "${HCCN_TEST_MPI:-OFF}" = ON ] && command -v mpirun >/dev/null; then
    for n in 2 4; do
        rm -f "$tmp/out".*
        timeout 600 "${mpirun[@]}" -np "$n" "$prog" "$topo" all "$tmp/out" \
            >"$tmp/err" 2>&1 ||
            fail "mpirun -np $n over TCP: exit $?: $(grep -v INFO "$tmp/err" | head -c 2000)"
        collect "mpi$n" "$n"
    done
else
    echo "mpirun cases skipped: libhccn built without Open MPI"
fi

# A client killed (SIGKILL) while its ranks wait in an allreduce: every
# rank of the others fails naming it, well within the timeout.
rm -f "$tmp/out".*
t0=$SECONDS
HCCN_TIMEOUT=60 HCCN_TRANSPORT=tcp timeout 300 "$launch" -n 2 -g 30 \
    "$prog" "$topo" kill "$tmp/out" >"$tmp/err" 2>&1
rc=$?
secs=$((SECONDS - t0))
cat "$tmp/out".* >"$tmp/all" 2>/dev/null
[ "$rc" -eq 137 ] || fail "kill over TCP: hccn-launch exit $rc, not 137"
[ "$secs" -lt 50 ] || fail "kill over TCP: took $secs s (timeout 60)"
want="process 1 (ranks 8-15) was lost (its connection closed: it exited or was killed): ranks 8-15 in allreduce #1 on comm 1"
for r in 0 1 2 3 4 5 6 7; do
    grep "^r0$r 001 allreduce .*HCCN_ERR_REMOTE" "$tmp/all" | grep -qF "$want" ||
        fail "kill over TCP: rank $r: $(grep "^r0$r 001" "$tmp/all")"
done

# Bad values: exit 1 at once, saying which variable and value.
expect_err() {
    local text=$1
    shift
    if timeout 60 env HCCN_PROC_WORLD=2 HCCN_PROC_RANK=0 "$@" \
        "$prog" "$topo" all >"$tmp/bad" 2>&1; then
        fail "$*: exit 0"
    fi
    grep -qF "$text" "$tmp/bad" || fail "$*: $(cat "$tmp/bad")"
}
expect_err "HCCN_RENDEZVOUS=tcp:127.0.0.1 needs tcp:HOST:PORT (no port given)" \
    HCCN_RENDEZVOUS=tcp:127.0.0.1
expect_err "HCCN_RENDEZVOUS=tcp:127.0.0.1:99999: port '99999' is not a number in [1, 65535]" \
    HCCN_RENDEZVOUS=tcp:127.0.0.1:99999
expect_err "HCCN_RENDEZVOUS=tcp:127.0.0.1:http: port 'http' is not a number" \
    HCCN_RENDEZVOUS=tcp:127.0.0.1:http
expect_err "HCCN_RENDEZVOUS=tcp:no-such-host.invalid:5000: host 'no-such-host.invalid' cannot be resolved" \
    HCCN_RENDEZVOUS=tcp:no-such-host.invalid:5000
expect_err "HCCN_RENDEZVOUS=tcp:0.0.0.0:5000: '0.0.0.0' names no host" \
    HCCN_RENDEZVOUS=tcp:0.0.0.0:5000
expect_err "HCCN_ADDR=no-such-host.invalid cannot be resolved" \
    HCCN_RENDEZVOUS=tcp:127.0.0.1:5000 HCCN_ADDR=no-such-host.invalid
expect_err "HCCN_TRANSPORT=udp is neither tcp nor unix" \
    HCCN_RENDEZVOUS=tcp:127.0.0.1:5000 HCCN_TRANSPORT=udp
expect_err "HCCN_TRANSPORT=tcp, but the rendezvous $tmp is a directory" \
    HCCN_RENDEZVOUS="$tmp" HCCN_TRANSPORT=tcp
# No host listening: the client gives up after the timeout, naming it.
port=$(free_port)
expect_err "no host process to connect to (rendezvous tcp:127.0.0.1:$port)" \
    HCCN_TIMEOUT=1 HCCN_PROC_RANK=1 HCCN_RENDEZVOUS="tcp:127.0.0.1:$port"

finish "procs_tcp: over TCP on loopback, identical lines to one process (by hand, hccn-launch -n 4, mpirun -np 2/4); a killed process is named; bad TCP values refused"
