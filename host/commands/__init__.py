"""The commands of ``python -m host``, one module each (``add_parser`` and ``run``), in the
order ``--help`` lists them; the pieces they share are in common.py (session, parameters,
backend), inputs.py (sketching sequence files) and options.py (parser pieces)."""

from . import cluster, dist, info, jsd, merge, motifs, search, sketch

COMMANDS = (sketch, dist, search, cluster, jsd, motifs, merge, info)
