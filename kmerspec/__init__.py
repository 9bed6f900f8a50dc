"""The ground floor: the bit-exact golden model and each kernel's contract.

Nothing here imports any other package of the project; ``hw/``, ``host/`` and ``sim/`` build on
it. ``kmerspec.golden`` is the pure-Python reference for every section of the specification
(docs/SPEC.md); ``kmerspec.layout`` holds the byte layouts the kernels and their drivers share.
"""
