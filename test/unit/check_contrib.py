# SPDX-License-Identifier: BSD-3-Clause
"""Check the packaging recipes in contrib/ against the tree they package.

Neither Spack nor EasyBuild runs inside `make check` (Spack is not even
installable on the development machine; CI runs EasyBuild for real, see
contrib/easybuild/ci.sh), so this checks what can drift without them:

- the Spack package loads against a stub of `spack.package` that records
  its directives: a version("X", sha256=...) for configure.ac's version
  beside main, the release URL scheme, autotools only for @main; its
  configure_args(), for every combination of variants, give only options
  that ./configure --help lists (and CC=/MPIFC=/PYTHON= from the spec),
  switch each optional part on or off explicitly, and build with the MPI
  compiler wrappers; the file passes what `spack style` would flag first
  (lines of at most 99 characters, no tabs or trailing blanks);
- every EasyBuild easyconfig evaluates (it is Python), has the keys
  EasyBuild requires, names the version configure.ac declares in its file
  name with its toolchain and versionsuffix, carries one sha256 with no
  comment on the checksums line (eb --inject-checksums), uses moduleclass
  'lib', gives only options ./configure --help lists, names every optional
  part, and every file in its sanity_check_paths is one that `make install`
  installed (DESTDIR listing given on the command line), or belongs to a
  part this configuration did not build (reported as SKIP).

    usage: check_contrib.py SRCDIR CONFIGURE_HELP_FILE INSTALLED_LIST_FILE
Prints PASS/FAIL/SKIP lines and exits 1 on any failure."""
import itertools
import os
import re
import sys
import types

failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def configure_options(help_text):
    return set(re.findall(r"^\s+(--(?:with|enable)-[a-z0-9-]+)", help_text, re.M))


def known(opt, options):
    """--without-X / --with-X=DIR are fine when configure lists --with-X."""
    base = opt.split("=")[0]
    base = base.replace("--without-", "--with-").replace("--disable-", "--enable-")
    return base in options


# --------------------------------------------------------------- spack ----
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# precious variables configure takes as arguments (configure --help lists them)
VARS = ("CC", "MPIFC", "PYTHON", "NVCC_ARCH")


def known_arg(arg, options):
    return arg.split("=")[0] in VARS or known(arg, options)


class _Directives:
    def __init__(self):
        self.versions, self.variants, self.deps = {}, {}, []


def spack_stub(rec):
    mod = types.ModuleType("spack.package")

    class AutotoolsPackage:
        pass

    class CudaPackage:
        cuda_arch_values = ("80", "90")
    mod.AutotoolsPackage, mod.CudaPackage = AutotoolsPackage, CudaPackage
    mod.version = lambda v, **kw: rec.versions.__setitem__(v, kw)
    mod.variant = lambda name, default=None, **kw: rec.variants.__setitem__(name, default)
    mod.depends_on = lambda spec, **kw: rec.deps.append((spec, kw.get("when")))
    for name in ("license", "maintainers", "extends", "conflicts", "patch", "provides"):
        setattr(mod, name, lambda *a, **kw: None)
    mod.Executable = lambda *a, **kw: (lambda *x, **y: None)
    return mod


class FakeSpec:
    def __init__(self, on):
        self.on = set(on)

    def satisfies(self, constraint):
        return constraint.lstrip("+") in self.on

    def __getitem__(self, name):
        return types.SimpleNamespace(prefix=f"/opt/{name}", mpicc=f"/opt/{name}/bin/mpicc",
                                     mpifc=f"/opt/{name}/bin/mpifort",
                                     command=types.SimpleNamespace(path=f"/opt/{name}/bin/{name}"))


def placeholder(sha, what):
    if sha == "0" * 64:
        print(f"SKIP: {what}: the checksum is a placeholder (scripts/release.sh --update)")


def check_style(path, what):
    lines = open(path).read().split("\n")
    long = [i + 1 for i, l in enumerate(lines) if len(l) > 99]
    check(not long, f"{what}: lines of at most 99 characters {long or ''}")
    bad = [i + 1 for i, l in enumerate(lines) if "\t" in l or l != l.rstrip()]
    check(not bad, f"{what}: no tabs or trailing blanks {bad or ''}")


def check_spack(srcdir, options, version):
    rec = _Directives()
    spack = types.ModuleType("spack")
    sys.modules["spack"], sys.modules["spack.package"] = spack, spack_stub(rec)
    path = os.path.join(srcdir, "contrib/spack/packages/libgcoll/package.py")
    ns = {"__name__": "libgcoll_package"}
    exec(compile(open(path).read(), path, "exec"), ns)
    cls = ns["Libgcoll"]
    check_style(path, "spack")
    check("main" in rec.versions, "spack: a version to build from git (main)")
    rel = rec.versions.get(version, {})
    check(bool(SHA256.match(rel.get("sha256", ""))),
          f"spack: version(\"{version}\", sha256=<64 hex digits>) of the release tarball")
    placeholder(rel.get("sha256", ""), "spack")
    url = getattr(cls, "url", "")
    check(url.endswith(f"/v{version}/libgcoll-{version}.tar.gz"),
          f"spack: url is the release scheme .../v{version}/libgcoll-{version}.tar.gz")
    check({"ucx", "hwloc", "python", "fortran"} <= set(rec.variants),
          "spack: variants ucx, hwloc, python, fortran")
    check(any(d == "mpi" for d, _ in rec.deps), "spack: depends on mpi")
    for tool in ("autoconf", "automake", "libtool"):
        whens = [w for d, w in rec.deps if d == tool]
        check(whens == ["@main"], f"spack: {tool} is a build dependency only for @main")
    for dep in ("py-numpy", "py-mpi4py"):
        check((dep, "+python") in rec.deps, f"spack: +python depends on {dep}")
    for on in itertools.product(*[[None, v] for v in ("ucx", "hwloc", "cuda", "python",
                                                      "fortran")]):
        pkg = cls.__new__(cls)
        pkg.spec = FakeSpec(v for v in on if v)
        args = pkg.configure_args()
        name = sorted(pkg.spec.on) or "nothing"
        bad = [a for a in args if not known_arg(a, options)]
        check(not bad, f"spack: configure_args with {name} only uses options configure lists "
                       f"{bad or ''}")
        check("CC=/opt/mpi/bin/mpicc" in args, f"spack: {name}: CC is spec['mpi'].mpicc")
        for dep in ("ucx", "hwloc", "cuda"):
            want = f"--with-{dep}=" if dep in pkg.spec.on else f"--without-{dep}"
            if not any(a.startswith(want) for a in args):
                check(False, f"spack: {name}: {dep} {'on' if dep in pkg.spec.on else 'off'} "
                             f"passes {want}")
        for part, extra in (("fortran", "MPIFC=/opt/mpi/bin/mpifort"),
                            ("python", "PYTHON=/opt/python/bin/python")):
            if part in pkg.spec.on:
                ok = f"--enable-{part}" in args and extra in args
                check(ok, f"spack: {name}: passes --enable-{part} and {extra.split('=')[0]}")
            elif f"--disable-{part}" not in args:
                check(False, f"spack: {name}: {part} off passes --disable-{part}")


# ----------------------------------------------------------- easybuild ----
FORTRAN_FILES = ("include/gcoll.mod", "lib/libgcoll_f08.", "lib/pkgconfig/gcoll_f08.pc")


def check_easybuild(srcdir, options, installed, version):
    folder = os.path.join(srcdir, "contrib/easybuild")
    ecs = sorted(f for f in os.listdir(folder) if f.endswith(".eb"))
    check(f"libgcoll-{version}-gompi-2023a.eb" in ecs, "easybuild: a gompi-2023a easyconfig")
    check(any("-CUDA-" in f for f in ecs), "easybuild: a -CUDA- easyconfig variant")
    pyver = [f.split("/")[1][len("python"):] for f in installed
             if re.match(r"lib/python3\.[0-9]+/site-packages/gcoll/__init__\.py$", f)]
    for ec in ecs:
        check_easyconfig(os.path.join(folder, ec), options, installed, version,
                         pyver[0] if pyver else None)


def check_easyconfig(path, options, installed, version, pyver):
    what = "easybuild " + os.path.basename(path)
    text = open(path).read()
    ns = {"SOURCE_TAR_GZ": "%(name)s-%(version)s.tar.gz", "SHLIB_EXT": "so",
          "SYSTEM": {"name": "system", "version": "system"}}
    exec(compile(text, path, "exec"), ns)
    for key in ("easyblock", "name", "version", "homepage", "description", "toolchain",
                "sources", "checksums", "sanity_check_paths", "moduleclass"):
        check(key in ns, f"{what}: has {key}")
    deps = {d[0]: d for d in ns.get("dependencies", [])}
    tmpl = {"name": ns.get("name"), "version": ns.get("version"),
            "cudaver": deps["CUDA"][1] if "CUDA" in deps else "?",
            "pyshortver": pyver or "3.X"}
    suffix = ns.get("versionsuffix", "") % tmpl
    tc = ns.get("toolchain", {})
    check(ns.get("version") == version, f"{what}: version {ns.get('version')} is "
                                        f"configure.ac's {version}")
    check(os.path.basename(path) == f"libgcoll-{version}-{tc.get('name')}-{tc.get('version')}"
                                    f"{suffix}.eb", f"{what}: file name is name-version-"
                                                    "toolchain-versionsuffix")
    sums = ns.get("checksums", [])
    check(len(sums) == 1 and bool(SHA256.match(str(sums[0]))),
          f"{what}: checksums is one sha256 of the release tarball")
    placeholder(str(sums[0]) if sums else "", what)
    lines = [l for l in text.split("\n") if l.startswith("checksums")]
    check(lines and all("#" not in l for l in lines), f"{what}: no comment on the checksums "
                                                      "line (eb --inject-checksums drops the "
                                                      "next block)")
    check(ns.get("moduleclass") == "lib", f"{what}: moduleclass 'lib'")
    opts = ns.get("configopts", "").split()
    bad = [o for o in opts if o.startswith("--") and not known(o, options)]
    check(opts and not bad, f"{what}: configopts only use options configure lists {bad or ''}")
    for part in ("--with-ucx", "--with-hwloc", "--with-cuda", "--enable-fortran",
                 "--enable-python"):
        off = part.replace("--with-", "--without-").replace("--enable-", "--disable-")
        check(any(o.split("=")[0] in (part, off) for o in opts),
              f"{what}: configopts name {part} or {off}")
    pre = ns.get("preconfigopts", "")
    check('CC="$MPICC"' in pre, f"{what}: builds with the toolchain's MPI wrapper "
                                "(CC=\"$MPICC\")")
    built_fortran = any(f.startswith(FORTRAN_FILES) for f in installed)
    for f in ns.get("sanity_check_paths", {}).get("files", []):
        if "%(pyshortver)s" in f and not pyver:
            print(f"SKIP: {what}: sanity file {f}: no Python binding in this build")
            continue
        f = f % tmpl
        if f.startswith(FORTRAN_FILES) and not built_fortran:
            print(f"SKIP: {what}: sanity file {f}: no Fortran binding in this build")
            continue
        check(f in installed, f"{what}: sanity file {f} is installed by make install")


def main(srcdir, help_file, installed_file):
    options = configure_options(open(help_file).read())
    check(len(options) >= 4, f"configure --help lists {len(options)} --with/--enable options")
    installed = {line.strip() for line in open(installed_file) if line.strip()}
    version = re.search(r"AC_INIT\(\[libgcoll\],\s*\[([^]]+)\]",
                        open(os.path.join(srcdir, "configure.ac")).read()).group(1)
    check_spack(srcdir, options, version)
    check_easybuild(srcdir, options, installed, version)
    print(f"check_contrib: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
