#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""meson.build repeats CMake's source and test lists by hand: this checks that
they name the same .cpp/.c files and the same tests, so that neither build
silently lacks a file or a test the other has, and that every .cpp/.c file of
lib/, drivers/, examples/, bench/, tests/, tools/ and plugins/ is named by one.

Read from the build files' text, not from a configured build, so that what a
build leaves out on this machine (DPDK, toml++, libibverbs missing) still
counts: CMake's CMakeLists.txt (every directory but build trees and
tests/install) against the top-level meson.build. Test names include those
made in foreach() loops and by CMake functions (omrc_tag_test). Conditions
(if/endif) are ignored: a test made under a condition in one build must exist,
under whatever condition, in the other.

    build_lists.py [ROOT]      exit 0 when the lists agree, 1 with each difference
"""
import os
import re
import sys

# Sources and tests only one build has, each with why. Anything else named by
# one build and not the other fails the check.
CMAKE_ONLY_SOURCES = {
    # libFuzzer programs (-fsanitize=fuzzer, clang): CMake's fuzz preset
    # builds them and scripts/test runs them; meson's builds are not for fuzzing.
    "tests/fuzz/fuzz_frame_parser.cpp": "libFuzzer target, CMake's fuzz preset",
    "tests/fuzz/fuzz_engine_rx.cpp": "libFuzzer target, CMake's fuzz preset",
    "tests/fuzz/fuzz_psp.cpp": "libFuzzer target, CMake's fuzz preset",
    "tests/fuzz/fuzz_cm.cpp": "libFuzzer target, CMake's fuzz preset",
}
MESON_ONLY_SOURCES = {}
CMAKE_ONLY_TESTS = {
    # check_install.sh installs a CMake build tree and builds consumers with
    # find_package(OpenMRC): meson installs no CMake package to consume.
    "install_consumer": "consumes CMake's install tree and package config",
    # perftest's and ibverbs-utils' programs over the udp driver: they run
    # Debian's binaries, not code meson builds differently (scripts/test skips
    # it in the clang build for the same reason); ibverbs_api runs a program on
    # meson's libibverbs.so.1.
    "ibverbs_perftest": "runs Debian's perftest, already run on CMake's build",
    # meson's libibverbs.so.1 is built without the DPDK driver (meson builds no
    # shared libomrc_dpdk for it to share libomrc's driver registry with).
    "ibverbs_perftest_memif": "meson's libibverbs.so.1 has no DPDK driver",
}
MESON_ONLY_TESTS = {}

# Directories whose CMakeLists.txt are not part of the tree's CMake build:
# tests/install is a separate project, the consumer of an installed tree.
CMAKE_SKIP_DIRS = {"tests/install"}
SOURCE_RE = re.compile(r"\.(cpp|c)$")
# Where sources live: every .cpp/.c file under these is named by a build.
SOURCE_DIRS = ("lib", "drivers", "examples", "bench", "tests", "tools", "plugins")


def strip_comments(text):
    """Drops '#' comments outside quoted strings (CMake and meson alike)."""
    out = []
    for line in text.splitlines():
        quote = None
        cut = len(line)
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "#":
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


# ---- CMake ----

def cmake_commands(text):
    """(name, [arguments]) of each command call, in order."""
    text = strip_comments(text)
    cmds = []
    for m in re.finditer(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text):
        # Skip calls nested inside another command's arguments (none in CMake
        # proper; this only guards against a name followed by '(' in a string).
        if cmds and m.start() < cmds[-1][2]:
            continue
        depth, i, quote = 1, m.end(), False
        while i < len(text) and depth:
            ch = text[i]
            if ch == '"':
                quote = not quote
            elif not quote and ch == "(":
                depth += 1
            elif not quote and ch == ")":
                depth -= 1
            i += 1
        args = re.findall(r'"[^"]*"|[^\s"]+', text[m.end():i - 1])
        cmds.append((m.group(1).lower(), [a.strip('"') for a in args], i))
    return [(name, args) for name, args, _ in cmds]


def cmake_lists(root):
    sources, tests = set(), set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith((".", "build")) and os.path.join(rel, d) not in CMAKE_SKIP_DIRS)
        if "CMakeLists.txt" not in filenames:
            continue
        with open(os.path.join(dirpath, "CMakeLists.txt"), encoding="utf-8") as f:
            cmds = cmake_commands(f.read())
        # Source files: any argument naming a .cpp/.c file, relative to this directory.
        for _, args in cmds:
            for a in args:
                if not SOURCE_RE.search(a) or "$<" in a:
                    continue
                a = re.sub(r"^\$\{(PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR)\}/", "/", a)
                a = re.sub(r"^\$\{CMAKE_CURRENT_SOURCE_DIR\}/", "", a)
                sources.add(os.path.normpath(a[1:] if a.startswith("/") else os.path.join(rel, a)))
        tests |= cmake_tests(cmds)
    return sources, tests


def cmake_tests(cmds):
    """add_test(NAME ...) names, with foreach() loops and function() calls expanded."""
    functions, names = {}, set()

    def block_of(seq, i, opener, closer):
        """The commands between seq[i] and its closer, and the index after the closer."""
        depth, j = 1, i + 1
        while depth:
            if seq[j][0] == opener:
                depth += 1
            elif seq[j][0] == closer:
                depth -= 1
            j += 1
        return seq[i + 1:j - 1], j

    def run(seq, env):
        i = 0
        while i < len(seq):
            name, args = seq[i]
            if name == "function":
                body, i = block_of(seq, i, "function", "endfunction")
                functions[args[0].lower()] = (args[1:], body)
                continue
            if name == "foreach":
                body, i = block_of(seq, i, "foreach", "endforeach")
                if len(args) > 1 and args[1] in ("IN", "RANGE"):
                    # Lists of variables are not evaluated here: fine while such a loop makes no test.
                    if any(n == "add_test" or n in functions for n, _ in body):
                        raise SystemExit(f"build_lists.py: foreach({' '.join(args)}) makes tests; not expanded here")
                    continue
                for item in args[1:]:
                    run(body, {**env, args[0]: item})
                continue
            if name == "add_test" and args and args[0] == "NAME":
                names.add(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), m.group(0)), args[1]))
            elif name in functions:
                params, body = functions[name]
                run(body, {**env, **dict(zip(params, args))})
            i += 1

    run(cmds, {})
    return names


# ---- meson ----

def meson_lists(root):
    with open(os.path.join(root, "meson.build"), encoding="utf-8") as f:
        text = strip_comments(f.read())
    sources = {os.path.normpath(s) for s in re.findall(r"'([^']*)'", text) if SOURCE_RE.search(s)}
    tests = set()
    # foreach VAR : [ 'a', 'b' ] ... test(VAR, ...) or test(VAR + 'suffix', ...) ... endforeach
    loops = []
    for m in re.finditer(r"\bforeach\s+(\w+)\s*:\s*\[([^\]]*)\](.*?)\bendforeach\b", text, re.S):
        items = re.findall(r"'([^']*)'", m.group(2))
        for t in re.finditer(r"\btest\(\s*(\w+)\s*(?:\+\s*'([^']*)'\s*)?,", m.group(3)):
            if t.group(1) == m.group(1):
                tests.update(item + (t.group(2) or "") for item in items)
        loops.append((m.start(), m.end()))
    for t in re.finditer(r"\btest\(\s*(?:'([^']*)'|(\w+))\s*(?:\+\s*'[^']*'\s*)?,", text):
        if t.group(1) is not None:
            tests.add(t.group(1))
        elif not any(a <= t.start() < b for a, b in loops):
            raise SystemExit(f"build_lists.py: meson test({t.group(2)}, ...) outside a foreach is not expanded here")
    return sources, tests


def tree_sources(root):
    """The .cpp/.c files of the source directories (tests/install's are its own project's)."""
    found = set()
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames if os.path.join(rel, d) not in CMAKE_SKIP_DIRS]
            found |= {os.path.join(rel, f) for f in filenames if SOURCE_RE.search(f)}
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    cm_src, cm_tests = cmake_lists(root)
    me_src, me_tests = meson_lists(root)
    problems = []

    def compare(what, ours, theirs, ours_name, theirs_name, allowed):
        for x in sorted(ours - theirs):
            if x not in allowed:
                problems.append(f"{what} {x}: in {ours_name}, not in {theirs_name}")
        for x in sorted(allowed):
            if x not in ours - theirs:
                problems.append(f"{what} {x}: allowed in {ours_name} only, but it is not (drop it from the list)")

    compare("source", cm_src, me_src, "CMake", "meson.build", CMAKE_ONLY_SOURCES)
    compare("source", me_src, cm_src, "meson.build", "CMake", MESON_ONLY_SOURCES)
    compare("test", cm_tests, me_tests, "CMake", "meson.build", CMAKE_ONLY_TESTS)
    compare("test", me_tests, cm_tests, "meson.build", "CMake", MESON_ONLY_TESTS)
    for src in sorted(cm_src | me_src):
        if not os.path.isfile(os.path.join(root, src)):
            problems.append(f"source {src}: named by a build, not in the tree")
    for src in sorted(tree_sources(root) - cm_src - me_src):
        problems.append(f"source {src}: in the tree, named by neither build")
    if problems:
        print("\n".join(problems))
        print("build lists differ: add the file or test to the other build, or to the allowed lists of "
              "tests/lint/build_lists.py with the reason", file=sys.stderr)
        return 1
    print(f"build lists: CMake and meson.build name the same {len(cm_src & me_src)} sources and "
          f"{len(cm_tests & me_tests)} tests; in one build only, as allowed:")
    for allowed, where in ((CMAKE_ONLY_SOURCES, "CMake"), (MESON_ONLY_SOURCES, "meson"),
                           (CMAKE_ONLY_TESTS, "CMake"), (MESON_ONLY_TESTS, "meson")):
        for name, why in sorted(allowed.items()):
            print(f"  {name} ({where}): {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
