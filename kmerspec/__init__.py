"""The ground floor: the bit-exact golden model and each kernel's contract.

Nothing here imports any other package of the project; ``hw/``, ``host/`` and ``sim/`` build on
it. ``kmerspec.golden`` is the pure-Python reference for every section of the specification
(docs/SPEC.md); ``kmerspec.kernels`` holds one contract module per kernel (its Params, host
arguments and byte layouts), built from ``kmerspec.params`` (every build parameter once),
``kmerspec.chunks`` (the chunk format), ``kmerspec.interface`` and ``kmerspec.regmap`` (the
host-argument description and the control register map).
"""
