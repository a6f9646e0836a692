"""Check the packaging recipes in contrib/ against the tree they package.

Neither Spack nor EasyBuild can be installed on the development machine (no
network beyond Debian and PyPI), so this checks what can drift without them:

- the Spack package loads against a stub of `spack.package` that records
  its directives; its configure_args(), for every combination of variants,
  give only options that ./configure --help lists, and each optional
  dependency is switched on or off explicitly;
- the EasyBuild easyconfig evaluates (it is Python), has the keys
  EasyBuild requires, names the version configure.ac declares, gives only
  options ./configure --help lists, and every file in its
  sanity_check_paths is one that `make install` installed (DESTDIR listing
  given on the command line).

    usage: check_contrib.py SRCDIR CONFIGURE_HELP_FILE INSTALLED_LIST_FILE
Prints PASS/FAIL lines and exits 1 on any failure."""
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
class _Directives:
    def __init__(self):
        self.versions, self.variants, self.deps = [], {}, []


def spack_stub(rec):
    mod = types.ModuleType("spack.package")

    class AutotoolsPackage:
        pass

    class CudaPackage:
        cuda_arch_values = ("80", "90")
    mod.AutotoolsPackage, mod.CudaPackage = AutotoolsPackage, CudaPackage
    mod.version = lambda v, **kw: rec.versions.append(v)
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
        return types.SimpleNamespace(prefix=f"/opt/{name}",
                                     command=types.SimpleNamespace(path=f"/opt/{name}/bin/{name}"))


def check_spack(srcdir, options):
    rec = _Directives()
    spack = types.ModuleType("spack")
    sys.modules["spack"], sys.modules["spack.package"] = spack, spack_stub(rec)
    path = os.path.join(srcdir, "contrib/spack/packages/libgcoll/package.py")
    ns = {"__name__": "libgcoll_package"}
    exec(compile(open(path).read(), path, "exec"), ns)
    cls = ns["Libgcoll"]
    check("main" in rec.versions, "spack: a version to build from (main)")
    check({"ucx", "hwloc", "python", "fortran"} <= set(rec.variants),
          "spack: variants ucx, hwloc, python, fortran")
    check(any(d == "mpi" for d, _ in rec.deps), "spack: depends on mpi")
    for on in itertools.product(*[[None, v] for v in ("ucx", "hwloc", "cuda", "python",
                                                      "fortran")]):
        pkg = cls.__new__(cls)
        pkg.spec = FakeSpec(v for v in on if v)
        args = pkg.configure_args()
        bad = [a for a in args if not known(a, options)]
        check(not bad, f"spack: configure_args with {sorted(pkg.spec.on) or 'nothing'} "
                       f"only uses options configure lists {bad or ''}")
        for dep in ("ucx", "hwloc", "cuda"):
            want = f"--with-{dep}=" if dep in pkg.spec.on else f"--without-{dep}"
            if not any(a.startswith(want) for a in args):
                check(False, f"spack: {dep} {'on' if dep in pkg.spec.on else 'off'} "
                             f"passes {want}")
        want = "--enable-fortran" if "fortran" in pkg.spec.on else "--disable-fortran"
        check(want in args, f"spack: fortran {'on' if 'fortran' in pkg.spec.on else 'off'} "
                            f"passes {want}")


# ----------------------------------------------------------- easybuild ----
def check_easybuild(srcdir, options, installed, version):
    path = os.path.join(srcdir, "contrib/easybuild/libgcoll-0.1.0-gompi-2023a.eb")
    ns = {"SOURCE_TAR_GZ": "%(name)s-%(version)s.tar.gz", "SHLIB_EXT": "so"}
    exec(compile(open(path).read(), path, "exec"), ns)
    for key in ("easyblock", "name", "version", "homepage", "description", "toolchain",
                "sources", "sanity_check_paths", "moduleclass"):
        check(key in ns, f"easybuild: has {key}")
    check(ns.get("version") == version, f"easybuild: version {ns.get('version')} is "
                                        f"configure.ac's {version}")
    check(os.path.basename(path).startswith(f"libgcoll-{version}-"), "easybuild: file name "
          "carries the version")
    opts = ns.get("configopts", "").split()
    bad = [o for o in opts if o.startswith("--") and not known(o, options)]
    check(opts and not bad, f"easybuild: configopts only use options configure lists {bad or ''}")
    for f in ns.get("sanity_check_paths", {}).get("files", []):
        check(f in installed, f"easybuild: sanity file {f} is installed by make install")


def main(srcdir, help_file, installed_file):
    options = configure_options(open(help_file).read())
    check(len(options) >= 4, f"configure --help lists {len(options)} --with/--enable options")
    installed = {line.strip() for line in open(installed_file) if line.strip()}
    version = re.search(r"AC_INIT\(\[libgcoll\],\s*\[([^]]+)\]",
                        open(os.path.join(srcdir, "configure.ac")).read()).group(1)
    check_spack(srcdir, options)
    check_easybuild(srcdir, options, installed, version)
    print(f"check_contrib: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
