# SPDX-License-Identifier: BSD-3-Clause
# Spack package for libgcoll.  Use it from this repository:
#     spack repo add contrib/spack && spack install libgcoll +cuda cuda_arch=90
# (the repository's repo.yaml names the namespace "gcoll").
import os

from spack.package import *


class Libgcoll(AutotoolsPackage, CudaPackage):
    """Hierarchical, GPU-aware collective operations (allreduce, bcast,
    reduce, allgather, reduce_scatter, alltoall, barrier) over an existing
    MPI communicator: shared memory inside a node, UCX between nodes."""

    homepage = "https://github.com/libgcoll/libgcoll"
    url = "https://github.com/libgcoll/libgcoll/releases/download/v0.1.0/libgcoll-0.1.0.tar.gz"
    git = "https://github.com/libgcoll/libgcoll.git"

    license("BSD-3-Clause")

    version("main", branch="main")
    # the reproducible `make dist` tarball: scripts/release.sh prints this line
    version("0.1.0", sha256="3fbc47bb59aee3e4ce26b7751985f98afc0c53d3423ee1f0610253a7801e292b")

    variant("ucx", default=True, description="UCX transport between nodes (else MPI p2p)")
    variant("hwloc", default=True, description="hwloc topology: NUMA, GPU and NIC locality")
    variant("python", default=False, description="Install the Python binding (mpi4py + NumPy)")
    variant("fortran", default=False, description="Build the Fortran 2008 binding (mpi_f08)")

    depends_on("c", type="build")
    depends_on("fortran", type="build", when="+fortran")
    # a release tarball has configure; a git checkout needs the autotools
    depends_on("autoconf", type="build", when="@main")
    depends_on("automake", type="build", when="@main")
    depends_on("libtool", type="build", when="@main")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("ucx", when="+ucx")
    depends_on("hwloc@2:", when="+hwloc")

    extends("python", when="+python")
    depends_on("python@3.7:", when="+python", type=("build", "run"))
    depends_on("py-numpy", when="+python", type="run")
    depends_on("py-mpi4py", when="+python", type="run")

    def autoreconf(self, spec, prefix):
        if not os.path.exists(self.configure_abs_path):
            Executable("./autogen.sh")()

    def setup_build_environment(self, env):
        # configure's default builds for sm_80, sm_90 and sm_90 PTX; cuda_arch
        # narrows or widens that (nvcc -gencode options, configure's NVCC_ARCH)
        if self.spec.satisfies("+cuda") and not self.spec.satisfies("cuda_arch=none"):
            archs = self.spec.variants["cuda_arch"].value
            env.set("NVCC_ARCH", " ".join(CudaPackage.cuda_flags(archs)))

    def configure_args(self):
        spec = self.spec
        # the MPI compiler wrappers build libgcoll (CC=$MPICC, MPIFC); --with-mpi
        # only points configure at that MPI's mpirun
        args = ["CC={0}".format(spec["mpi"].mpicc), "--with-mpi={0}".format(spec["mpi"].prefix)]
        for dep in ("ucx", "hwloc", "cuda"):
            if spec.satisfies("+" + dep):
                args.append("--with-{0}={1}".format(dep, spec[dep].prefix))
            else:
                args.append("--without-" + dep)
        if spec.satisfies("+fortran"):
            args += ["--enable-fortran", "MPIFC={0}".format(spec["mpi"].mpifc)]
        else:
            args.append("--disable-fortran")
        if spec.satisfies("+python"):
            args += ["--enable-python", "PYTHON={0}".format(spec["python"].command.path)]
        else:
            args.append("--disable-python")
        return args
