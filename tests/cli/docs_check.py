#!/usr/bin/python3
"""Runs the runnable commands of README.md and docs/*.md; each must exit 0.

    docs_check.py SOURCE_DIR BINARY_DIR [--list]

The convention (README.md, "Documentation"): a fenced block opened by
```sh on the line right after a <!-- docs-check --> comment is runnable.
In it, a line starting with "$ " is a command (a line ending in a
backslash continues it on the next line); any other line is its expected
output, shown to the reader and not compared. Commands run with bash from
the source directory, with the build directory first in PATH (so
`hccn-perf` is the built one) and HCCN_BINARY_DIR, BUILD_DIR and HCCN_LIB
pointing into it. They must not write into the source tree.

--list prints the commands without running them.
"""
import glob
import os
import subprocess
import sys
import time

MARKER = "<!-- docs-check -->"
TIMEOUT_S = 60


def blocks(path):
    """[(line number, command)] of the runnable blocks of path. Raises
    ValueError for a marker that is not followed by a ```sh block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            raise ValueError("%s:%d: %s must be followed by a ```sh line"
                             % (path, i + 1, MARKER))
        cmd, start, k = None, 0, i + 2
        while k < len(lines) and lines[k].strip() != "```":
            text = lines[k]
            if cmd is not None:
                cmd += "\n" + text
            elif text.startswith("$ "):
                cmd, start = text[2:], k + 1
            if cmd is not None and not cmd.endswith("\\"):
                out.append((start, cmd))
                cmd = None
            k += 1
        if k == len(lines):
            raise ValueError("%s:%d: block never closed" % (path, i + 2))
    return out


def environment(binary):
    env = dict(os.environ)
    env["PATH"] = binary + os.pathsep + env.get("PATH", "")
    env["HCCN_BINARY_DIR"] = env["BUILD_DIR"] = binary
    env["HCCN_LIB"] = os.path.join(binary, "libhccn.so")
    env["MPLBACKEND"] = "Agg"
    return env


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    source, binary = (os.path.abspath(a) for a in sys.argv[1:3])
    files = [os.path.join(source, "README.md")] + sorted(
        glob.glob(os.path.join(source, "docs", "*.md")))
    try:
        cmds = [(os.path.relpath(f, source), n, c) for f in files
                for n, c in blocks(f)]
    except ValueError as e:
        sys.exit("FAIL: %s" % e)
    if not cmds:
        sys.exit("FAIL: no runnable command found (marker %s)" % MARKER)
    if "--list" in sys.argv[3:]:
        for f, n, c in cmds:
            print("%s:%d: %s" % (f, n, c))
        return
    env, failed, t_all = environment(binary), 0, time.monotonic()
    for f, n, c in cmds:
        t0 = time.monotonic()
        try:
            p = subprocess.run(["bash", "-c", c], cwd=source, env=env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               timeout=TIMEOUT_S)
            rc, text = p.returncode, p.stdout
        except subprocess.TimeoutExpired:
            rc, text = "timeout", "(no exit within %d s)" % TIMEOUT_S
        print("%s:%d: %s (%.1f s): %s" % (f, n, "ok" if rc == 0 else "FAIL",
                                          time.monotonic() - t0, c))
        if rc != 0:
            failed += 1
            tail = "\n".join(text.splitlines()[-15:])
            print("  exit %s; output ends:\n%s" % (rc, tail))
    print("%d command(s), %d failed, %.1f s" % (len(cmds), failed,
                                                 time.monotonic() - t_all))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
