"""Build the compiled part of the fast backend; all metadata lives in pyproject.toml.

``pip install -e .`` builds it, or ``python setup.py build_ext --inplace`` for a checkout.
host.fast.native also builds it in place on first import when it is missing.

The flags are portable: no -march, so the binary runs on any CPU of its architecture; the
all-pairs loop picks AVX2/SSSE3 code at run time (host/fast/_allpairs.c), the k-mer stream
AVX-512/AVX2 code (host/fast/_kmer_simd.c), each such function compiled for its instruction
set by a target attribute. Floating-point contraction is off so that estimates round exactly
as Python's do.
"""

import sys

from setuptools import Extension, setup

_COMPILE_ARGS = ["-O3", "-std=c99", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra",
                 "-Wno-unused-parameter"]

setup(
    ext_modules=[
        Extension("host.fast._native",
                  sources=["host/fast/_native.c", "host/fast/_kmer_stream.c",
                           "host/fast/_kmer_simd.c",
                           "host/fast/_allpairs.c", "host/fast/_mle.c", "host/fast/_jsd.c"],
                  depends=["host/fast/_native.h", "host/fast/_kmer_hll_avx512.h"],
                  extra_compile_args=_COMPILE_ARGS if sys.platform != "win32" else [],
                  libraries=["m"] if sys.platform != "win32" else []),
    ],
)
