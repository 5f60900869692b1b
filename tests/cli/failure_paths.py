"""Every failure path of the library records its cause (test_failure_paths.sh).

Usage: failure_paths.py SOURCE_DIR [--list]

A failure is recorded once, where it is found (hccn_sim_fail, or its alias
hccn_rt_error), and passed up unchanged. This check reads every
`return -1;` and `return NULL;` in runtime/, hierarchy/ and device_sim/ and
sorts it into one of:

  records    the block that returns calls a recording function first
             (hccn_sim_fail*, hccn_rt_error*, or a file's own helper that
             does: see RECORDERS);
  passes up  the block returns because a call it just made failed: the
             callee recorded the cause (the condition, or the statement
             before it that set the tested variable, calls a library
             function that is not a pure query, see PURE), or it tests a
             schedule's `failed` flag, which is set where a failure is
             recorded. The check trusts the callee; at run time
             hccn_sim_fail_context reports a callee that recorded nothing
             as a bug ("failed without a recorded cause");
  answer     not a failure: the function's contract gives -1 or NULL as an
             ordinary answer (a lookup's "none", a cache miss), or it hands
             the cause on in an out-parameter its caller records
             (NOT_FAILURES names each with its reason);
  bare       none of these: a failure that loses its cause.

Prints the counts (and with --list every site and its class) and exits 1 if
any is bare.
"""
import glob
import os
import re
import sys

# Functions that record a failure (besides hccn_sim_fail and friends).
RECORDERS = (r"\b(?:hccn_sim_v?fail\w*|hccn_rt_error\w*|hccn_sim_jfail\w*|"
             r"nomem|not_hier|not_served|select_fail)\s*\(")

# (file, function) -> why its -1 or NULL is an answer, not a failure.
NOT_FAILURES = {
    ("hierarchy/algos.c", "hccn_hier_algo_find"):
        "a lookup: NULL is 'no algorithm of that name'",
    ("hierarchy/algo_levels.c", "hccn_hier_algo_levels"):
        "a lookup: NULL is 'not a composition row'",
    ("hierarchy/algo_levels.c", "hccn_hier_combo_find"):
        "a lookup: NULL is 'no composition row of that name'",
    ("hierarchy/algo_levels.c", "hccn_hier_levels_row"):
        "a lookup: NULL is 'no row runs these levels'",
    ("hierarchy/levels.c", "hccn_hier_levels_tail_algo"):
        "an answer: NULL is 'the tail splits evenly: no gather'",
    ("hierarchy/algo_spec.c", "token_name"):
        "a lookup: NULL is 'not an algorithm name' (the parser says why)",
    ("hierarchy/algo_spec.c", "hccn_hier_spec_levels_next"):
        "an iterator: NULL is 'no further row'",
    ("hierarchy/select.c", "first_able"):
        "a lookup: NULL is 'no row serves the collective'",
    ("hierarchy/algo_spec.c", "known_name"):
        "a lookup: NULL is 'not an algorithm name' (the parser says why)",
    ("hierarchy/algo_spec.c", "fail"):
        "the spec parser writes why; hccn_hier_select records it once, "
        "with the status",
    ("hierarchy/algo_spec.c", "pick_fail"):
        "the spec's pick writes why; hccn_hier_select records it once, "
        "with the status",
    ("hierarchy/algo_util.c", "hccn_hier_finish"):
        "passes up what the builder recorded (its rc, or s->failed)",
    ("hierarchy/cost_hier.c", "hier_shape"):
        "-1: the algorithm does not apply; the cost model answers 'no "
        "prediction'",
    ("hierarchy/tree_shape.c", "hccn_hier_tree_inorder"):
        "the root of an empty range of positions is -1 (no member)",
    ("hierarchy/tree_shape.c", "bit_up"):
        "the root's parent is -1 (no member)",
    ("hierarchy/levels.c", "outer_fold"):
        "NULL: the sub-schedule does not fold; the builder builds the "
        "whole schedule instead",
    ("hierarchy/phase.c", "hier_phase"):
        "a lookup: NULL is 'this phase has no name'",
    ("hierarchy/phase.c", "hccn_sched_phase_name"):
        "a lookup: NULL is 'this phase has no name'",
    ("runtime/comm.c", "hccn_rt_comm_new"):
        "its cleanup label: every goto follows an allocation or call that "
        "recorded why",
    ("runtime/comm.c", "hccn_rt_pick_find"):
        "a cache lookup: NULL is a miss",
    ("runtime/comm.c", "hccn_rt_pick_store"):
        "a cache: NULL is 'not kept' (the call selects again next time)",
    ("runtime/exec.c", "part_reuse"): "a cache lookup: NULL is a miss",
    ("runtime/exec.c", "part_keep"):
        "a cache: NULL is 'not kept' (the caller frees the tasks)",
    ("runtime/exec_drive.c", "moves_for"):
        "NULL is 'no precomputed moves': the caller moves step by step",
    ("runtime/handle.c", "token_slot"):
        "a lookup: NULL is 'names no slot' (the caller reports the stale "
        "or foreign handle)",
    ("runtime/inflight.c", "op_uses"):
        "a lookup: NULL is 'the op does not use that memory'",
    ("runtime/kernels.c", "kernel_lookup"):
        "a lookup: dtype and op are checked at the API, so NULL never "
        "reaches a reduction",
    ("runtime/plan_cache.c", "find"): "a cache lookup: NULL is a miss",
    ("runtime/plan_cache.c", "publish"):
        "a cache: NULL is 'full' (the call keeps its own schedule) or the "
        "allocator's recorded failure",
    ("runtime/proc_join.c", "connect_host"):
        "a socket call failed: errno holds the cause, which the caller "
        "records with the process and rendezvous (sys_error)",
    ("runtime/proc_run.c", "watch"): "a thread's return value, not a failure",
    ("runtime/proc_data.c", "operand"):
        "NULL is the absent operand of a move (a receive without a local "
        "operand), not a failure",
    ("runtime/proc_dserve.c", "serve_line"):
        "a thread's return value, not a failure",
    ("runtime/proc_wire.c", "take"):
        "the wire reader: a short message marks the reader bad; the caller "
        "that knows which message and process records it",
    ("runtime/proc_wire.c", "hccn_rt_wire_get_str"):
        "the wire reader: NULL is the NULL string sent, or a short message "
        "(the reader is marked bad; its caller records it)",
    ("runtime/proc_wire.c", "hccn_rt_wire_io"):
        "a socket call failed or the peer left: the caller records it with "
        "the process (a data line's caller answers HCCN_ERR_REMOTE naming "
        "it, which the host then loses)",
    ("runtime/proc_wire.c", "hccn_rt_wire_send"):
        "a bad message or a closed line: the caller records it with the "
        "process",
    ("runtime/proc_net.c", "hccn_rt_net_resolve"):
        "a name that does not resolve: the caller records it with the "
        "variable and value that named it",
    ("runtime/proc_net.c", "hccn_rt_net_listen_on"):
        "a socket call failed: errno holds the cause, which the caller "
        "records with the process and rendezvous",
    ("runtime/proc_net.c", "unix_addr"):
        "the directory's path is too long: errno ENAMETOOLONG, which the "
        "caller records with the rendezvous",
    ("runtime/proc_net.c", "connect_to"):
        "one connection attempt failed: the caller retries, then records "
        "it with the process and rendezvous",
    ("runtime/proc_net.c", "hccn_rt_net_listen_data"):
        "a socket call failed: errno holds the cause, which the caller "
        "records with the process and rendezvous",
    ("runtime/proc_net.c", "outward_addr"):
        "no interface address: process 0 broadcasts the failure, which "
        "every process records",
    ("runtime/recover.c", "hccn_rt_ft_find_grow"):
        "a lookup: NULL is 'no communicator waits for this grow'",
    ("runtime/sim_topo.c", "hccn_topo_config_dir"):
        "an iterator: -1 is 'no directory i' (documented)",
    ("runtime/proc_serve.c", "get_ctx"):
        "-1 on the wire is 'no context' (a call outside any rank)",
    ("runtime/recover_round.c", "token_of"):
        "a lookup: NULL is 'not a member'",
    ("device_sim/arena_numa.c", "hccn_sim_numa_pick"):
        "-1 is 'no NUMA node to pin to' (one node, or no cores)",
    ("device_sim/fault_view.c", "hccn_sim_topo_fault_view"):
        "NULL is 'no fault changes the view' (or, with *nomem set, the "
        "allocator's recorded failure)",
    ("device_sim/launch.c", "thread_main"):
        "a thread's return value, not a failure",
    ("device_sim/topo_reduce.c", "hccn_sim_topo_reduce_node"):
        "a question: -1 is 'this node's switch does not reduce this dtype "
        "and op' (the call then runs without in-switch reduction)",
    ("device_sim/topo_reduce.c", "hccn_sim_topo_reduce_split"):
        "a question: -1 is 'this route does not reach a reducing switch'",
    ("device_sim/topo_reduce.c", "hccn_sim_topo_reduce_net"):
        "a question: -1 is 'the network switch does not reduce this dtype "
        "and op' (the call then runs without in-network reduction)",
    ("device_sim/topo_reduce.c", "split_at"):
        "a question: -1 is 'this route does not enter that unit's switch'",
    ("device_sim/software.c", "hccn_sim_sw_route_pick"):
        "a question: -1 is 'the topology has no software model' (a trace "
        "then names no protocol)",
    ("device_sim/software.c", "hccn_sim_sw_links_pick"):
        "a question: -1 is 'the topology has no software model' (as "
        "hccn_sim_sw_route_pick, on a route already found)",
    ("device_sim/engine_post.c", "hccn_sim_succ_lists"):
        "a check: -1 is 'dependencies do not point backwards'; the poster "
        "records it, the replay memo takes it as no match",
    ("device_sim/flow.c", "route_down"):
        "a question: -1 is 'no link of the route is down'",
    ("device_sim/flow_relay.c", "whole_route"):
        "a question: -1 is 'a link of the route is down'",
    ("device_sim/flow_relay.c", "via"):
        "a question: -1 is 'no route through this relay'",
    ("device_sim/flow_relay.c", "hccn_sim_flow_relay"):
        "a question: -1 is 'no relay route' (the caller fails the transfer "
        "naming the link that is down)",
    ("device_sim/replay.c", "eligible"):
        "a question: -1 is 'this call may not be recorded or replayed' "
        "(it runs normally)",
    ("device_sim/replay.c", "hccn_sim_replay_find"):
        "a cache lookup: NULL is a miss (the call runs normally)",
    ("device_sim/replay.c", "hccn_sim_replay_lookup"):
        "a cache lookup: NULL is a miss (the call runs normally)",
    ("device_sim/topo_fold.c", "refuse"):
        "a question: -1 is 'the topology does not fold', the reason written "
        "to why (the engine then simulates every node)",
    ("device_sim/software.c", "hccn_sim_sw_preset"):
        "a lookup: NULL is 'no preset of that name'",
    ("device_sim/topo_faults.c", "hccn_sim_topo_find_link"):
        "a lookup: -1 is 'no such link' (the caller names the link asked "
        "for)",
    ("device_sim/topo_faults.c", "index_dev"):
        "a lookup: -1 is 'no such device'",
    ("device_sim/topo_faults.c", "index_link"):
        "a lookup: -1 is 'no such link'",
    ("device_sim/topo_find.c", "look_in"):
        "a lookup: -1 is 'not in this directory' (the caller lists where "
        "it looked)",
    ("device_sim/topo_override.c", "split_path"):
        "the edit parser: -1 with *bad at the column; its caller writes the "
        "message naming the path and the column",
    ("device_sim/topo_override.c", "parse_value"):
        "json-c's tokenizer could not be made (*ok = 0): its caller reports "
        "the allocation failure",
    ("device_sim/topo_route.c", "route_intra"):
        "-1 is 'no route' (documented: hccn_sim_topo_route)",
    ("device_sim/topo_route.c", "route_inter"):
        "-1 is 'no route' (validation rules it out)",
    ("device_sim/topo_route.c", "route_any"):
        "-1 is 'no route' (or no alternative route)",
    ("device_sim/topo_route.c", "route_checked"):
        "-1 is 'no route' for NPUs out of range (documented, tested)",
}

# Functions that answer a question and record nothing: a condition on them
# is a check of this function's own, not a callee's failure.
PURE = {"hccn_coll_name", "seen", "set_has", "row_length", "now_s",
        "hccn_hier_is_rooted", "kept", "map_ok", "in_slab", "tok_is",
        "hccn_hier_algo_find", "hccn_hier_levels_row", "hccn_hier_combo_find",
        "strcmp", "hccn_sim_fail_status"}

RET = re.compile(r"\breturn\s+(-1|NULL)\s*;")
FUNC = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(\w+)\s*\([^;]*$")
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "else",
            "defined", "_Alignof", "alignof"}


def strip_comments(text):
    """Comments and string literals blanked out, lines kept."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    text = re.sub(r"//[^\n]*", blank, text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', lambda m: '"' + " " *
                  (len(m.group(0)) - 2) + '"', text)


def function_of(lines, i):
    """The name of the function whose body holds line i."""
    for j in range(i, -1, -1):
        if lines[j].startswith("{") and j > 0:
            for k in range(j - 1, max(j - 8, -1), -1):
                m = FUNC.match(lines[k])
                if m:
                    return m.group(1)
            return "?"
    return "?"


def controller(lines, i):
    """(first line, text) of the if/while/else that governs the return at
    line i, from its keyword through the return; (i, line i) if none."""
    depth, past = 0, False
    for j in range(i, max(i - 60, -1), -1):
        line = lines[j]
        if j < i:
            depth += line.count("}") - line.count("{")
        if depth < 0:
            if not re.search(r"\b(if|else|while|for)\b|\)\s*{", line) or \
                    re.match(r"^[A-Za-z_{]", line):
                return i, lines[i]      # unconditional in its block
            for k in range(j, max(j - 8, -1), -1):
                if re.search(r"\b(if|else|while|for)\b", lines[k]):
                    return k, "\n".join(lines[k:i + 1])
            return j, "\n".join(lines[j:i + 1])
        if depth == 0 and j < i and line.rstrip().endswith((";", "}")):
            past = True                 # a statement before, same block
        if depth == 0 and not past and \
                re.search(r"\b(if|while)\s*\(|\belse\b", line):
            return j, "\n".join(lines[j:i + 1])
    return i, lines[i]


def just_before(lines, i):
    """The statements right before line i in its block, back to the block's
    start or the end of an earlier block."""
    text = []
    for j in range(i - 1, max(i - 12, -1), -1):
        line = lines[j]
        if line.rstrip().endswith(("}", "{")) or re.search(r"\bif\s*\(", line):
            if re.search(r"\b(if|else)\b", line):
                text.insert(0, line)
            break
        text.insert(0, line)
    return "\n".join(text)


def tested_calls(lines, first, cond, library):
    """Library functions the condition calls, or that set a variable it
    tests in the 15 lines before it."""
    calls = {c for c in CALL.findall(cond) if c not in KEYWORDS}
    for var in set(re.findall(r"[A-Za-z_][\w.>-]*", cond)):
        if var in KEYWORDS or var in ("NULL", "return"):
            continue
        pat = re.compile(r"(?<![\w>.])" + re.escape(var) + r"\s*=(?!=)")
        for k in range(first - 1, max(first - 16, -1), -1):
            m = pat.search(lines[k])
            if m:
                rhs = lines[k][m.end():]
                for n in range(k + 1, min(k + 5, first + 1)):
                    if ";" in rhs:
                        break
                    rhs += lines[n]
                calls |= set(CALL.findall(rhs.split(";")[0]))
                break
    calls = {c for c in calls if c in library and not c.endswith("free")}
    return calls - PURE


def classify(rel, lines, i, library):
    fn = function_of(lines, i)
    first, cond = controller(lines, i)
    if re.search(RECORDERS, cond + "\n" + just_before(lines, i)):
        return "records", fn, ""
    if re.search(r"->failed\b", cond):
        return "passes up", fn, "a failed flag, set where it was recorded"
    calls = tested_calls(lines, first, cond, library)
    if calls:
        return "passes up", fn, ", ".join(sorted(calls))
    if (rel, fn) in NOT_FAILURES:
        return "answer", fn, NOT_FAILURES[(rel, fn)]
    return "bare", fn, ""


def main():
    src = sys.argv[1]
    listing = "--list" in sys.argv[2:]
    files = []
    for d in ("runtime", "hierarchy", "device_sim"):
        files += sorted(glob.glob(os.path.join(src, d, "*.c")))
    texts = {f: strip_comments(open(f).read()).split("\n") for f in files}
    library = set()
    for lines in texts.values():
        for line in lines:
            m = FUNC.match(line)
            if m:
                library.add(m.group(1))
    library |= {"hccn_sim_malloc", "hccn_sim_calloc", "hccn_sim_realloc",
                "hccn_sim_strdup"}
    counts, rows = {}, []
    for f in files:
        rel = os.path.relpath(f, src)
        lines = texts[f]
        for i, line in enumerate(lines):
            if RET.search(line):
                cls, fn, why = classify(rel, lines, i, library)
                counts[cls] = counts.get(cls, 0) + 1
                rows.append((cls, "%s:%d: %s" % (rel, i + 1, fn), why))
    for cls, where, why in rows:
        if listing or cls in ("bare", "answer"):
            print("%-9s %s%s" % (cls, where, ": " + why if why else ""))
    order = ("records", "passes up", "answer", "bare")
    print("failure paths: " + ", ".join(
        "%d %s" % (counts.get(c, 0), c) for c in order))
    return 1 if counts.get("bare", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
