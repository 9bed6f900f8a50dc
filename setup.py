"""Build the compiled part of the fast backend; all metadata lives in pyproject.toml.

``pip install -e .`` builds it, or ``python setup.py build_ext --inplace`` for a checkout.
host.fast.native also builds it in place on first import when it is missing.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("host.fast._native", sources=["host/fast/_native.c"],
                  extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"]),
    ],
)
