"""The public API and what libhccn exports agree (tests/cli/test_public_api.sh).

Usage: public_api_check.py SOURCE_DIR LIBHCCN_SO

1. Every function the public headers (include/hccn/*.h) declare carries
   HCCN_API, and the exported functions (nm -D --defined-only) are exactly
   those: nothing internal leaks, nothing public is missing.
2. The programs in tools/ (and its folders, the importers') include only
   public headers ("hccn/...") and their own ("tools/...", or a header
   beside the file).
3. Every library function the Python binding calls is exported.
4. The library (device_sim/, hierarchy/, runtime/) allocates only through
   device_sim/alloc.h (hccn_sim_malloc, ...), so that hccn_set_allocator
   sees every block and the allocation-failure sweep reaches every site.
Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import subprocess
import sys

src, lib = sys.argv[1], sys.argv[2]
problems = []


def strip(text):
    """C text without comments, preprocessor lines and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"(?m)^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


declared, marked = set(), set()
for path in sorted(glob.glob(os.path.join(src, "include", "hccn", "*.h"))):
    text = strip(open(path).read())
    # File-scope statements; a function declaration names hccn_x( directly
    # (a function pointer type is "(*hccn_x)").
    for stmt in re.split(r"[;{}]", text):
        m = re.search(r"(?<!\(\*)(?<!\w)(hccn_\w+)\s*\(", stmt)
        if m is None or "typedef" in stmt:
            continue
        declared.add(m.group(1))
        if re.search(r"\bHCCN_API\b", stmt):
            marked.add(m.group(1))
for name in sorted(declared - marked):
    problems.append("public header declares %s without HCCN_API" % name)

out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                     capture_output=True, text=True).stdout
exported = {f[2] for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "TtWw"}
for name in sorted(exported - declared):
    problems.append("%s exports %s, which no public header declares"
                    % (os.path.basename(lib), name))
for name in sorted(declared - exported):
    problems.append("%s is declared public but %s does not export it"
                    % (name, os.path.basename(lib)))

for path in sorted(glob.glob(os.path.join(src, "tools", "**", "*.[ch]"),
                          recursive=True)):
    for no, line in enumerate(open(path), 1):
        m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
        # A header beside the file (no directory) is the tool's own too.
        if m and "/" in m.group(1) and \
                not re.match(r"(hccn|tools)/", m.group(1)):
            problems.append('%s:%d: includes "%s": tools may include only '
                            'hccn/... and tools/... headers'
                            % (os.path.relpath(path, src), no, m.group(1)))

used = set()
for path in glob.glob(os.path.join(src, "python", "hccn", "*.py")):
    # Prefixes of names built at run time ("hccn_i" + name) are not symbols.
    used |= set(re.findall(r'"(hccn_\w+)"(?!\s*\+)', open(path).read()))
for name in sorted(used - exported):
    problems.append("python/hccn uses %s, which %s does not export"
                    % (name, os.path.basename(lib)))

CALL = re.compile(r"(?<![\w.>])(malloc|calloc|realloc|strdup|free)\s*\(")


def blank(m):
    """A comment or string as spaces, its newlines kept (line numbers)."""
    return re.sub(r"[^\n]", " ", m.group(0))


for layer in ("device_sim", "hierarchy", "runtime"):
    for path in sorted(glob.glob(os.path.join(src, layer, "*.c"))):
        if path.endswith(os.path.join("device_sim", "alloc.c")):
            continue   # the wrappers themselves
        text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"', blank,
                      open(path).read(), flags=re.S)
        for m in CALL.finditer(text):
            no = text.count("\n", 0, m.start()) + 1
            problems.append("%s:%d: calls %s(): the library allocates through "
                            "device_sim/alloc.h (hccn_sim_%s)"
                            % (os.path.relpath(path, src), no, m.group(1),
                               m.group(1)))

for p in problems:
    print(p)
print("%d public functions, %d exported, %d used by python/hccn; %d problems"
      % (len(declared), len(exported), len(used), len(problems)))
sys.exit(1 if problems else 0)
