#!/usr/bin/env python3
"""check-arch.py - the architecture rules of docs/architecture.md, checked.

Run by `make check` (ctest lint/architecture) as
    scripts/check-arch.py [BUILD_DIR]
and exits 1 with one line per broken rule, each naming the file and what to do:

  layers   a file includes only headers of its own folder and of the folders it
           may use: src/ top-level folders by ALLOWED below, src/core domains by the
           sl_core_domain() lines of src/core/CMakeLists.txt (transitively);
  purity   src/core objects (in BUILD_DIR) define no writable globals and call no
           I/O, clock, randomness, environment, thread or process functions;
  size     files stay readable: src/ at most 1,000 lines, tests/ and bench/ 1,200.

The compiler enforces the core layers too (a domain sees only the headers of the
libraries it links); this script says so in words, and checks what the compiler
cannot: the top-level directions, purity, and size.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

# Who may include whom among the top-level folders of src/ (DESIGN.md §2).
ALLOWED = {
    "core": set(),
    "store": {"core"},
    "common": {"core"},
    "ctl": {"core", "store", "common"},
    "agent": {"core", "common"},
    "cli": {"core", "common"},
}
SIZE_LIMITS = (("src/", 1000), ("tests/", 1200), ("bench/", 1200))

# Symbols that src/core may not reference: I/O, clocks, randomness, environment,
# threads, processes. Time and randomness are arguments there (DESIGN.md §2).
IMPURE = re.compile(
    r"^(f?open|fopen64|open64|openat|close|fclose|f?read|fread|f?write|fwrite|"
    r"f?printf|v?f?printf|puts|fputs|fputc|putchar|getchar|fgets|fflush|fseek|ftell|"
    r"stat|fstat|lstat|unlink|rename|mkdir|opendir|readdir|"
    r"time|clock|clock_gettime|gettimeofday|timespec_get|"
    r"rand|srand|random|srandom|drand48|arc4random|getrandom|randombytes.*|"
    r"getenv|secure_getenv|setenv|putenv|"
    r"pthread_.*|thrd_.*|mtx_.*|sleep|usleep|nanosleep|"
    r"exit|_exit|_Exit|abort|system|popen|fork|exec.*|kill|signal|sigaction|"
    r"socket|connect|bind|listen|accept|send|recv|"
    r"json_load_file|json_loadf|json_dump_file|json_dumpf|yaml_parser_set_input_file)$")


def rel(p):
    return os.path.relpath(p, ROOT)


def source_files(top):
    for d, _, files in os.walk(top):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


def core_domains():
    """domain -> set of domains it may use (transitively), from the CMake file."""
    text = open(os.path.join(SRC, "core", "CMakeLists.txt")).read()
    direct = {}
    for m in re.finditer(r"^sl_core_domain\((\w+)([^)]*)\)", text, re.M):
        direct[m.group(1)] = set(re.findall(r"sl_core_(\w+)", m.group(2)))
    closure = {}

    def walk(d, seen):
        for u in direct.get(d, ()):
            if u not in seen:
                seen.add(u)
                walk(u, seen)
        return seen
    for d in direct:
        closure[d] = walk(d, set())
    return closure


def owner(path):
    """('core', 'money') or ('ctl', None) for a file under src/."""
    parts = os.path.relpath(path, SRC).split(os.sep)
    if parts[0] == "core" and len(parts) > 2:
        return ("core", parts[1])
    return (parts[0], None)


def check_layers(errors):
    headers = {}
    for p in source_files(SRC):
        if p.endswith(".h"):
            name = os.path.basename(p)
            if name in headers:
                errors.append(f"layers: {rel(p)}: header name also used by "
                              f"{rel(headers[name])}; give one of them another name")
            headers[name] = p
    domains = core_domains()
    for p in source_files(SRC):
        top, dom = owner(p)
        if top == "core" and dom not in domains:
            errors.append(f"layers: {rel(p)}: src/core/{dom} is not a domain; add "
                          f"sl_core_domain({dom} ...) to src/core/CMakeLists.txt")
            continue
        for n, line in enumerate(open(p, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or m.group(1) not in headers:
                continue
            htop, hdom = owner(headers[m.group(1)])
            where = f"{rel(p)}:{n}: includes {rel(headers[m.group(1)])}"
            if htop != top and htop not in ALLOWED.get(top, set()):
                errors.append(f"layers: {where}, but src/{top} may use only "
                              f"{', '.join(sorted(ALLOWED.get(top, ()))) or 'nothing outside itself'}"
                              f" (DESIGN.md §2)")
            elif top == "core" and hdom != dom and hdom not in domains[dom]:
                errors.append(f"layers: {where}, but core/{dom} may use only "
                              f"{', '.join(sorted(domains[dom])) or 'itself'}; move the "
                              f"code, or declare the use in src/core/CMakeLists.txt")


def check_purity(errors, build):
    libdir = os.path.join(build, "src", "core")
    libs = sorted(f for f in os.listdir(libdir) if f.endswith(".a")) if os.path.isdir(libdir) else []
    if not libs:
        errors.append(f"purity: no core libraries under {rel(libdir)}; build first")
        return
    for lib in libs:
        out = subprocess.run(["objdump", "-t", os.path.join(libdir, lib)],
                             capture_output=True, text=True, check=True).stdout
        obj = lib
        for line in out.splitlines():
            m = re.match(r"^(\S+\.o):\s+file format", line)
            if m:
                obj = m.group(1).replace(".c.o", ".c")
                continue
            f = line.split()
            if len(f) < 4 or not re.match(r"^[0-9a-f]{8,}$", f[0]):
                continue
            sec, name = f[-3], f[-1]
            if " O " in line and re.match(r"^\.(data|bss|tdata|tbss)(\.|$)", sec) \
                    and not sec.startswith(".data.rel.ro"):
                errors.append(f"purity: core {obj}: writable global '{name}' ({sec}); "
                              f"core keeps no state: pass it in, or make it const")
            elif sec == "*UND*" and IMPURE.match(name):
                errors.append(f"purity: core {obj}: calls {name}(); core does no I/O and "
                              f"reads no clock: take the value as an argument")


def check_size(errors):
    for top in ("src", "tests", "bench"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".c", ".h", ".sh", ".py")):
                    continue
                p = os.path.join(d, f)
                limit = next(lim for pre, lim in SIZE_LIMITS if rel(p).startswith(pre))
                with open(p, encoding="utf-8", errors="replace") as fh:
                    n = sum(1 for _ in fh)
                if n > limit:
                    errors.append(f"size: {rel(p)}: {n} lines, over {limit}; split it "
                                  f"by concept into files named for what they hold")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "check")
    errors = []
    check_layers(errors)
    check_purity(errors, build)
    check_size(errors)
    for e in errors:
        print(e)
    if errors:
        print(f"check-arch: {len(errors)} broken rule(s); see docs/architecture.md")
        return 1
    print("check-arch: layers, purity and size hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
