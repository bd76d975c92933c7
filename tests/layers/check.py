#!/usr/bin/env python3
"""The floor plan of src/ against the layers that docs/ARCHITECTURE.md draws.

Reads every `#include "..."` of src/ (a .c and its .h are one module,
named by its path under src/ without the ending) and fails, naming
FILE:LINE, on
  - an include that runs from a module of a lower layer up to one of a
    higher layer;
  - modules that include each other in a circle (a.c includes b.h and
    b.c includes a.h; or longer), every include of the circle named;
  - a file of src/ that no layer places, or that two layers place;
  - an include that names no file of src/;
  - a known exception that no include needs any more (delete its line);
  - a .c of src/ without a row in the table under "## Modules" (its first
    column, `PATH` under src/), when the document has that section.

The layers are the first ```layers block under "## Layers" in the
document: one line a layer from top to bottom, `NAME: ENTRY ENTRY ...`,
where an entry ending in `/` is a folder of src/ (every file below it) and
any other entry a module (src/ENTRY.c and src/ENTRY.h); an entry that
matches no file is allowed, so the plan may name a module before it lands.
A line `except FILE -> INCLUDE` lets one include through while the move
that removes it lands; `#` starts a comment.

usage: check.py [--self-test] SRC_DIR ARCHITECTURE_MD
  --self-test  first runs the check on small trees with planted faults
               (an include up, a circle, a file in no layer, a stale
               exception, a .c missing from the module table) and fails
               unless it finds each one, and on a clean tree, which must
               pass.
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


class Plan:
    """The layers block: layers[i] is (name, entries), top first."""

    def __init__(self, layers, exceptions):
        self.layers = layers
        self.exceptions = exceptions  # (file, include, doc line) tuples

    def layers_of(self, module):
        """The indexes of every layer with an entry that places `module`."""
        found = []
        for i, (_, entries) in enumerate(self.layers):
            for e in entries:
                if e.endswith("/") and (module + "/").startswith(e) and module + "/" != e:
                    found.append(i)
                    break
                if not e.endswith("/") and e == module:
                    found.append(i)
                    break
        return found


def read_plan(doc_path, problems):
    """Parses the ```layers block of `doc_path`; None (and a problem) when
    there is none or it holds no layer."""
    try:
        with open(doc_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        problems.append("%s: %s" % (doc_path, e.strerror))
        return None
    in_section = False
    start = None
    for n, line in enumerate(lines):
        if line.startswith("## "):
            in_section = line.strip() == "## Layers"
        elif in_section and line.strip() == "```layers":
            start = n + 1
            break
    if start is None:
        problems.append('%s: no ```layers block under "## Layers"' % doc_path)
        return None
    layers, exceptions = [], []
    for n in range(start, len(lines)):
        text = lines[n].split("#", 1)[0].strip()
        if lines[n].strip() == "```":
            break
        if not text:
            continue
        where = "%s:%d" % (doc_path, n + 1)
        m = re.fullmatch(r"except\s+(\S+)\s*->\s*(\S+)", text)
        if m:
            exceptions.append((m.group(1), m.group(2), where))
            continue
        m = re.fullmatch(r"([^:]+):\s*(.*)", text)
        if not m or not m.group(2).split():
            problems.append("%s: not 'NAME: ENTRY ...' nor 'except FILE -> INCLUDE': %s" %
                            (where, text))
            continue
        layers.append((m.group(1).strip(), m.group(2).split()))
    else:
        problems.append("%s: the ```layers block is not closed" % doc_path)
    if not layers:
        problems.append("%s: the ```layers block names no layer" % doc_path)
        return None
    return Plan(layers, exceptions)


def read_modules(doc_path):
    """The first column of the tables under "## Modules..." (paths under
    src/), or None when the document has no such section."""
    names, inside = None, False
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Modules")
                names = set() if inside and names is None else names
            elif inside and re.match(r"\|\s*`([^`]+)`\s*\|", line):
                names.add(re.match(r"\|\s*`([^`]+)`", line).group(1))
    return names


def read_includes(src, problems):
    """Every quoted include of src/: (file, line, included file) with paths
    as shown (the parent of `src` as their root)."""
    root = os.path.dirname(os.path.abspath(src))
    out = []
    files = []
    for d, dirs, names in os.walk(src):
        dirs.sort()
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                files.append(os.path.join(d, name))
    for path in files:
        shown = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                # The compiler looks beside the file first, then in src/.
                target = None
                for base in (os.path.dirname(path), src):
                    cand = os.path.normpath(os.path.join(base, name))
                    if os.path.isfile(cand):
                        target = cand
                        break
                if target is None:
                    problems.append('%s:%d: #include "%s" names no file of %s' %
                                    (shown, n, name, os.path.relpath(src, root)))
                    continue
                out.append((shown, n, name, os.path.relpath(target, root)))
    return [os.path.relpath(p, root) for p in files], out


def module_of(shown, src_shown):
    """src/state/seen.c -> state/seen"""
    return os.path.splitext(os.path.relpath(shown, src_shown))[0]


def circles(edges):
    """The strongly connected components of more than one module (Tarjan),
    each a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = sorted(set(edges) | {b for bs in edges.values() for b in bs})

    def visit(v):
        # Iterative, so a long chain cannot reach Python's recursion limit.
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def shortest_loop(comp, edges):
    """The shortest loop of modules through `comp` (a circle), as a list
    that returns to its first module."""
    inside = set(comp)
    best = None
    for start in comp:
        came = {start: None}
        queue = [start]
        found = None
        while queue and found is None:
            nxt = []
            for v in queue:
                for w in sorted(edges.get(v, ())):
                    if w not in inside:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in came:
                        came[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            queue = nxt
        if found is None:
            continue
        loop = [found]
        while came[loop[-1]] is not None:
            loop.append(came[loop[-1]])
        loop.reverse()
        if best is None or len(loop) < len(best):
            best = loop
    return best


def check(src, doc):
    """The problems of the tree `src` against the plan in `doc`, one line
    each, in a stable order; [] when it keeps the plan."""
    problems = []
    plan = read_plan(doc, problems)
    if plan is None:
        return problems
    files, includes = read_includes(src, problems)
    src_shown = os.path.relpath(os.path.abspath(src), os.path.dirname(os.path.abspath(src)))

    layer = {}
    for shown in files:
        mod = module_of(shown, src_shown)
        found = plan.layers_of(mod)
        if not found:
            problems.append("%s: in no layer of %s's ```layers block: add module '%s' "
                            "(or its folder) to the layer it belongs to" % (shown, doc, mod))
        elif len(found) > 1:
            problems.append("%s: placed in two layers (%s)" %
                            (shown, ", ".join(plan.layers[i][0] for i in found)))
        else:
            layer[mod] = found[0]

    listed = read_modules(doc)
    for shown in files:
        if listed is not None and shown.endswith(".c") and \
                os.path.relpath(shown, src_shown) not in listed:
            problems.append("%s: no row in the module table of %s (## Modules)" % (shown, doc))

    used = set()
    edges, where = {}, {}
    for shown, n, name, target in includes:
        a, b = module_of(shown, src_shown), module_of(target, src_shown)
        if a == b:
            continue
        # An exception names its file from the repository's root (src/...).
        excused = [x for x in plan.exceptions
                   if os.path.join(src_shown, os.path.relpath(x[0], "src")) == shown and
                   x[1] == name]
        if excused:
            used.add(excused[0])
            continue
        edges.setdefault(a, set()).add(b)
        where.setdefault((a, b), []).append("%s:%d" % (shown, n))
        if a in layer and b in layer and layer[b] < layer[a]:
            problems.append('%s:%d: #include "%s" runs up from layer %s to layer %s' %
                            (shown, n, name, plan.layers[layer[a]][0], plan.layers[layer[b]][0]))

    for comp in circles(edges):
        loop = shortest_loop(comp, edges)
        ties = ["%s (%s -> %s)" % (", ".join(where[(a, b)]), a, b)
                for a, b in zip(loop, loop[1:] + loop[:1])]
        more = len(comp) - len(loop)
        problems.append("circle %s: %s%s" % (" -> ".join(loop + loop[:1]), "; ".join(ties),
                                              " (%d more modules tied in it)" % more if more else ""))

    for x in plan.exceptions:
        if x not in used:
            problems.append("%s: exception '%s -> %s' matches no include any more: delete it" % (
                x[2], x[0], x[1]))
    return problems


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


PLAN = """# A plan

## Layers

```layers
top: main cmd/
middle: state state/   # a comment
bottom: util/
%s```

## After
"""


MODULES = """
## Modules

| module | owns |
|---|---|
""" + "".join("| `%s` | x |\n" % m for m in
               ("main.c", "cmd/top.c", "state/file.c", "util/buf.c", "util/err.c"))


def self_test():
    """The check on planted trees: each fault found and named, a clean tree
    passing. Returns the failures."""
    failures = []
    cases = [
        ("a clean tree", {}, "", []),
        ("an include up", {"src/util/log.c": '#include "state.h"\n'}, "",
         ['src/util/log.c:2: #include "state.h" runs up from layer bottom to layer middle']),
        ("an include up into a folder", {"src/state/file.c": '#include "cmd/top.h"\n'}, "",
         ['src/state/file.c:3: #include "cmd/top.h" runs up from layer middle to layer top']),
        ("two modules that include each other",
         {"src/util/err.c": '#include "util/buf.h"\n'}, "",
         ["circle util/buf -> util/err -> util/buf: src/util/buf.c:1 (util/buf -> util/err); "
          "src/util/err.c:2 (util/err -> util/buf)"]),
        ("an include beside the file", {"src/util/err.h": '#include "buf.h"\n'}, "",
         ["circle util/buf -> util/err -> util/buf: src/util/buf.c:1 (util/buf -> util/err); "
          "src/util/err.h:1 (util/err -> util/buf)"]),
        ("a file in no layer", {"src/extra.c": '#include "util/buf.h"\n'}, "",
         ["src/extra.c: in no layer"]),
        ("an include of nothing", {"src/main.c": '#include "gone.h"\n'}, "",
         ['src/main.c:3: #include "gone.h" names no file of src']),
        ("an excused include up", {"src/util/log.c": '#include "state.h"\n'},
         "except src/util/log.c -> state.h  # being removed\n", []),
        ("a stale exception", {}, "except src/util/log.c -> state.h\n",
         ["exception 'src/util/log.c -> state.h' matches no include any more"]),
        ("every .c in the module table", {}, "", [], MODULES + "| `util/log.c` | x |\n"),
        ("a .c missing from the module table", {}, "", [
            "src/util/log.c: no row in the module table"], MODULES),
    ]
    base = {
        "src/main.c": '#include "cmd/top.h"\n#include "state.h"\n',
        "src/cmd/top.h": '#include "state.h"\n',
        "src/cmd/top.c": '#include "cmd/top.h"\n#include "util/buf.h"\n',
        "src/state.h": '#include "util/buf.h"\n',
        "src/state/file.c": '#include "state.h"\n#include "util/err.h"\n',
        "src/util/buf.h": "",
        "src/util/buf.c": '#include "util/err.h"\n',
        "src/util/err.h": "",
        "src/util/err.c": '#include "util/err.h"\n',
        "src/util/log.c": '#include "util/buf.h"\n',
    }
    for label, planted, exceptions, want, *tail in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in base.items():
                write(tmp, rel, text + planted.get(rel, ""))
            for rel, text in planted.items():
                if rel not in base:
                    write(tmp, rel, text)
            write(tmp, "docs/ARCHITECTURE.md", PLAN % exceptions + "".join(tail))
            old = os.getcwd()
            os.chdir(tmp)
            try:
                got = check("src", "docs/ARCHITECTURE.md")
            finally:
                os.chdir(old)
        if not want and got:
            failures.append("self-test, %s: expected no problem, got:\n  %s" %
                            (label, "\n  ".join(got)))
        for w in want:
            if not any(w in g for g in got):
                failures.append("self-test, %s: expected '%s', got:\n  %s" %
                                (label, w, "\n  ".join(got) or "(nothing)"))
        if want and len(got) != len(want):
            failures.append("self-test, %s: expected %d problems, got:\n  %s" %
                            (label, len(want), "\n  ".join(got)))
    return failures


def main(argv):
    args = argv[1:]
    selftest = args[:1] == ["--self-test"]
    if selftest:
        args = args[1:]
    if len(args) != 2:
        sys.stderr.write("usage: check.py [--self-test] SRC_DIR ARCHITECTURE_MD\n")
        return 2
    failed = False
    if selftest:
        for f in self_test():
            print("FAIL: " + f, file=sys.stderr)
            failed = True
    src, doc = os.path.abspath(args[0]), os.path.abspath(args[1])
    # Paths in messages are shown from the repository's root.
    root = os.path.dirname(src)
    os.chdir(root)
    shown_doc = os.path.relpath(doc, root)
    problems = check(os.path.basename(src), doc if shown_doc.startswith("..") else shown_doc)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("%d problem(s) with the layers of docs/ARCHITECTURE.md (## Layers)" % len(problems),
              file=sys.stderr)
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
