"""The commands of ``python -m host``, one module each (``add_parser`` and ``run``), in the
order ``--help`` lists them; the pieces they share are in common.py (session, parameters,
backend), inputs.py (sketching sequence files), collections.py (list files and directories
among the inputs) and options.py (parser pieces)."""

from . import cluster, dist, info, jsd, merge, motifs, screen, search, sketch

COMMANDS = (sketch, dist, search, screen, cluster, jsd, motifs, merge, info)
