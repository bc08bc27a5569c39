#!/usr/bin/env python3
"""build-image.py - a small local container image assembled from the host's own
installed Debian packages, imported into podman; nothing is pulled from a registry.

    scripts/build-image.py NAME PKG...      prints the image reference

The image holds exactly the files dpkg lists for PKG and their installed dependency
closure (Pre-Depends and Depends; the first installed alternative; virtual packages
through what provides them), the /etc/alternatives links, a minimal /etc/passwd and
/etc/group, and an ld.so.cache made for that tree (ldconfig -r). Paths under the
merged-/usr links (/bin, /sbin, /lib, /lib64) are stored under /usr, with the same
links in the image.

Cached: the reference is localhost/suanli/NAME:KEY, KEY a hash of this script and the
sorted "package version" list, so the same inputs are built once (podman image exists)
and any package upgrade builds a new one. Why from the host and not debootstrap: the
host already holds the exact packages (and python3-torch for the torchrun test), the
only network our CI has is the Debian mirror through apt, and a copy of installed
files needs none of it. The build stages hard links (no copying on one filesystem).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

MERGED = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")


def query(fmt, pkgs):
    r = subprocess.run(["dpkg-query", "-W", "-f", fmt] + pkgs, capture_output=True, text=True)
    return r.stdout


def closure(roots):
    inst, provides, deps = {}, {}, {}
    fmt = "${Package}\t${db:Status-Abbrev}\t${Version}\t${Provides}\t${Pre-Depends},${Depends}\n"
    for line in query(fmt, []).splitlines():
        p, st, v, prov, dep = (line.split("\t") + [""] * 5)[:5]
        if st.startswith("ii"):
            inst[p] = v
            deps[p] = dep
            for x in prov.split(","):
                x = x.strip().split(" ")[0]
                if x:
                    provides.setdefault(x, p)
    seen, todo = set(), list(roots)
    for r in roots:
        if r not in inst:
            sys.exit(f"build-image: package {r} is not installed here (scripts/deps.sh installs it)")
    while todo:
        p = todo.pop().split(":")[0]
        if p not in inst:
            p = provides.get(p)
        if not p or p in seen:
            continue
        seen.add(p)
        for alt in deps.get(p, "").split(","):
            for a in alt.split("|"):
                n = a.strip().split(" ")[0].split(":")[0]
                if n and (n in inst or n in provides):
                    todo.append(n)
                    break
    return sorted((p, inst[p]) for p in seen)


def canon(path):
    """/bin/sh -> usr/bin/sh where /bin is the merged-/usr link."""
    parts = path.lstrip("/").split("/")
    if parts and parts[0] in MERGED and os.path.islink("/" + parts[0]):
        target = os.readlink("/" + parts[0]).lstrip("/")
        parts = target.split("/") + parts[1:]
    return "/".join(parts)


def stage(root, pkgs):
    files = set()
    for p, _ in pkgs:
        out = subprocess.run(["dpkg", "-L", p], capture_output=True, text=True).stdout
        for f in out.splitlines():
            if f.startswith("/") and f not in ("/.", "/"):
                files.add(f)
    for top in MERGED:
        if os.path.islink("/" + top):
            os.symlink(os.readlink("/" + top).lstrip("/"), os.path.join(root, top))
    alts = "/etc/alternatives"
    for a in sorted(os.listdir(alts)) if os.path.isdir(alts) else []:
        files.add(os.path.join(alts, a))
    # the links update-alternatives made (/usr/bin/awk -> /etc/alternatives/awk):
    # dpkg -L does not list them; their targets decide whether they resolve
    adir = "/var/lib/dpkg/alternatives"
    for a in sorted(os.listdir(adir)) if os.path.isdir(adir) else []:
        with open(os.path.join(adir, a)) as f:
            lines = f.read().split("\n")
        links = [lines[1]] if len(lines) > 1 else []
        i = 2
        while i + 1 < len(lines) and lines[i]:
            links.append(lines[i + 1])
            i += 2
        for link in links:
            if link.startswith("/") and os.path.islink(link):
                target = os.path.realpath(link)
                if os.path.exists(target):
                    files.add(link)
    for f in sorted(files):
        if not os.path.lexists(f) or f.strip("/") in MERGED:
            continue
        dst = os.path.join(root, canon(f))
        if os.path.isdir(f) and not os.path.islink(f):
            os.makedirs(dst, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            continue
        if os.path.islink(f):
            os.symlink(os.readlink(f), dst)
        else:
            try:
                os.link(f, dst)
            except OSError:
                shutil.copy2(f, dst)
    etc = os.path.join(root, "etc")
    os.makedirs(etc, exist_ok=True)
    for d in ("tmp", "work", "proc", "sys", "dev", "run", "root", "var/tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    with open(os.path.join(etc, "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
        if os.path.exists(os.path.join(root, "usr/sbin/sshd")):
            # sshd's privilege separation user (instance images, docs/isolation.md)
            f.write("sshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n")
    with open(os.path.join(etc, "group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")
    subprocess.run(["ldconfig", "-r", root], check=False, stderr=subprocess.DEVNULL)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: build-image.py NAME PKG...")
    name, roots = sys.argv[1], sys.argv[2:]
    pkgs = closure(roots)
    h = hashlib.sha256()
    with open(__file__, "rb") as f:
        h.update(f.read())
    for p, v in pkgs:
        h.update(f"{p} {v}\n".encode())
    ref = f"localhost/suanli/{name}:{h.hexdigest()[:16]}"
    if subprocess.run(["podman", "image", "exists", ref]).returncode == 0:
        print(ref)
        return
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="suanli-image-", dir="/var/tmp")
    try:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        stage(root, pkgs)
        tar = subprocess.Popen(["tar", "-C", root, "--numeric-owner", "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "--quiet", "-", ref], stdin=tar.stdout,
                             stdout=subprocess.DEVNULL)
        tar.stdout.close()
        if tar.wait() != 0 or imp.returncode != 0:
            sys.exit(f"build-image: podman import of {ref} failed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"build-image: built {ref} ({len(pkgs)} packages) in {time.monotonic() - t0:.1f} s",
          file=sys.stderr)
    print(ref)


if __name__ == "__main__":
    main()
