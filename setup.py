"""Builds liblse.so, the C API's shared library; pyproject.toml holds the metadata.

liblse is a plain shared library (no PyInit_ function, loaded by C programs,
not imported), so the extension's file name is ``liblse.so`` rather than
Python's ``<name>.cpython-*.so``. It links libpython with an rpath to it and
records the installing interpreter (``sys.executable``) for capi/embed.c.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

LIBRARY = "liblse"


class BuildSharedLibrary(build_ext):
    def finalize_options(self) -> None:
        super().finalize_options()
        # The recorded interpreter is not a source file, so an up-to-date check
        # would reuse a liblse.so that a build for another venv left in build/.
        self.force = True

    def get_ext_filename(self, fullname: str) -> str:
        parts = fullname.split(".")
        if parts[-1] == LIBRARY:  # inplace builds pass the last part only
            return os.path.join(*parts[:-1], f"{LIBRARY}.so")
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return [] if ext.name.endswith(LIBRARY) else super().get_export_symbols(ext)


def _c_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of a path is a valid C string literal


def liblse() -> Extension:
    libdir = sysconfig.get_config_var("LIBDIR")
    version = sysconfig.get_config_var("LDVERSION")  # "3.11"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise SystemExit("the LSE C API needs a Python built with --enable-shared (a libpython to link)")
    return Extension(
        f"lse.capi.{LIBRARY}",
        sources=["capi/lse.c", "capi/embed.c"],
        include_dirs=["capi"],
        define_macros=[("LSE_PYTHON_EXECUTABLE", _c_string(sys.executable)),
                       ("LSE_LIBPYTHON", _c_string(sysconfig.get_config_var("INSTSONAME")))],
        extra_compile_args=["-fvisibility=hidden", "-std=gnu11"],
        library_dirs=[libdir],
        libraries=[f"python{version}", "dl"],
        runtime_library_dirs=[libdir],
    )


setup(ext_modules=[liblse()], cmdclass={"build_ext": BuildSharedLibrary})
