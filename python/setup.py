# SPDX-License-Identifier: MIT
# Builds python/native (the kernels + the ctypes interface) with CMake and puts
# libattnbench_py.so inside the attnbench package. Environment:
#   ATTNBENCH_SOURCE_DIR  the attnbench repository (default: this folder's parent)
#   CMAKE                 the cmake program (default: cmake)
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = "libattnbench_py.so"


class BuildNative(build_py):
    def run(self):
        super().run()
        src = os.environ.get("ATTNBENCH_SOURCE_DIR") or os.path.dirname(HERE)
        if not os.path.isfile(os.path.join(src, "kernels", "attn.h")):
            raise SystemExit(f"attnbench: {src} has no kernels/attn.h (set ATTNBENCH_SOURCE_DIR)")
        cmake = os.environ.get("CMAKE", "cmake")
        build = os.path.join(os.path.abspath(self.build_lib), "..", "attnbench-native")
        subprocess.check_call([cmake, "-S", os.path.join(HERE, "native"), "-B", build,
                               "-DCMAKE_BUILD_TYPE=Release", f"-DATTNBENCH_SOURCE_DIR={src}"])
        subprocess.check_call([cmake, "--build", build, "-j2"])
        dest = os.path.join(self.build_lib, "attnbench")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(os.path.join(build, LIB), os.path.join(dest, LIB))


class NativeDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a native library
        return True


setup(cmdclass={"build_py": BuildNative}, distclass=NativeDistribution)
