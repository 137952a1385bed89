"""Build of the headscope package: pure Python over libheadscope.so.

At install the package records where the library was built and keeps a copy
of it, so that `import headscope` finds it (headscope/_lib.py says in which
order it looks). The library comes from the CMake build folder: the
environment variable HEADSCOPE_BUILD names it, else the repository's build/
beside this folder. Without a built library the install stops with a message
saying how to build it.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

LIB = "libheadscope.so"


def build_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.abspath(os.environ.get("HEADSCOPE_BUILD") or os.path.join(here, "..", "build"))


class BuildPy(build_py):
    """build_py that writes headscope/_build.py and copies libheadscope.so."""

    def run(self):
        super().run()
        src = os.path.join(build_dir(), LIB)
        if not os.path.isfile(src):
            raise SystemExit(
                "headscope: no %s in %s: build the library first (BUILD=build bash scripts/build.sh "
                "from the repository root), or name its build folder in HEADSCOPE_BUILD" % (LIB, build_dir()))
        dest = os.path.join(self.build_lib, "headscope")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(src, os.path.join(dest, LIB))
        with open(os.path.join(dest, "_build.py"), "w") as f:
            f.write('"""Written at install (setup.py): the build folder the library was copied from."""\n')
            f.write("BUILD_DIR = %r\n" % build_dir())


class BinaryDistribution(Distribution):
    """The wheel carries a shared library: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution,
      package_data={"headscope": [LIB]})
