#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Add the SPDX license identifier to source files that lack it.

    scripts/add-spdx.py [--check] [--only EXT,EXT...] PATH...

PATH is a file or a folder (searched recursively; in a git checkout, the
files git tracks or would track there: build outputs and ignored files are
left out).  --only limits folders to files with these endings (c,h,py...).  Files handled: .c .h .cu (a /* */ line), .F90 .f90 (a !
line), .py .sh .inc .am .ac .eb, autogen.sh, .ci/run and files whose first
line is a shell or Python shebang (a # line).  The identifier goes on the
first line, or just after a shebang (and a Python coding line), so the
shebang stays first and an opening comment block stays intact below it.
Files that already name an SPDX identifier in their first five lines are
left alone.  --check changes nothing and exits 1 when a file lacks one."""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: BSD-3-Clause"
C_EXT = (".c", ".h", ".cu")
F_EXT = (".F90", ".f90")
HASH_EXT = (".py", ".sh", ".inc", ".am", ".ac", ".eb")


def style(path, first):
    name = os.path.basename(path)
    if name.endswith(C_EXT):
        return "/* %s */\n" % TAG
    if name.endswith(F_EXT):
        return "! %s\n" % TAG
    if name.endswith(HASH_EXT) or name in ("autogen.sh", "run") or first.startswith("#!"):
        if name == "run" and not first.startswith("#!"):
            return None
        return "# %s\n" % TAG
    return None


def files_under(path):
    if os.path.isfile(path):
        return [path]
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard", "--", path], capture_output=True,
                             check=True).stdout.decode()
        listed = [f for f in out.split("\0") if f]
        if listed:
            return listed
    except (OSError, subprocess.CalledProcessError):
        pass
    return [os.path.join(d, f) for d, _, fs in os.walk(path) for f in sorted(fs)]


def fix(path, check):
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
    except (UnicodeDecodeError, OSError):
        return False
    first = lines[0] if lines else ""
    line = style(path, first)
    if line is None or any("SPDX-License-Identifier" in l for l in lines[:5]):
        return False
    if check:
        print("missing SPDX identifier: " + path)
        return True
    at = 0
    if first.startswith("#!"):
        at = 1
        if len(lines) > 1 and path.endswith(".py") and "coding" in lines[1] \
                and lines[1].startswith("#"):
            at = 2
    lines.insert(at, line)
    st = os.stat(path)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    os.chmod(path, st.st_mode)
    print("added: " + path)
    return True


def main(argv):
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    only = None
    if "--only" in argv:
        i = argv.index("--only")
        only = tuple("." + e.lstrip(".") for e in argv[i + 1].split(","))
        del argv[i:i + 2]
    if not argv:
        sys.exit(__doc__)
    files = []
    for p in argv:
        under = files_under(p)
        files += [f for f in under if only is None or os.path.isfile(p) or f.endswith(only)]
    changed = [f for f in dict.fromkeys(files) if fix(f, check)]
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
