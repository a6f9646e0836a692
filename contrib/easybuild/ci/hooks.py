# SPDX-License-Identifier: BSD-3-Clause
"""EasyBuild hooks for CI (contrib/easybuild/ci.sh): the easyconfig runs as
shipped, with --try-toolchain=system,system, and this parse hook swaps its
EasyBuild dependencies for the Debian packages CI has, loaded as external
modules (module names in $GCOLL_EB_EXTERNAL, metadata in the file given to
--external-modules-metadata).  pkgconf comes from Debian too."""
import os


def parse_hook(ec, *args, **kwargs):
    if ec.name != "libgcoll":
        return
    mods = os.environ.get("GCOLL_EB_EXTERNAL", "").split()
    ec["builddependencies"] = []
    ec["dependencies"] = [(mod, "EXTERNAL_MODULE") for mod in mods]
