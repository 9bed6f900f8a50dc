"""The names the command line offers as choices, each defined once here and imported by the
module that implements them: host.cli builds every command's parser on every start, and these
come without numpy (tests/test_cli_startup.py)."""

__all__ = ["METRICS", "ANI_SOURCES", "METHODS", "PLOT_ORDERS", "TREES", "ARITHMETICS"]

#: Metric names, as ``--metric`` takes them (host.metrics).
METRICS = ("jaccard", "containment", "ani", "mash")
#: what an ANI is computed from, as ``--ani-from`` takes it (SPEC 3 "Other metrics")
ANI_SOURCES = ("jaccard", "containment")
#: clustering methods, as ``cluster --method`` takes them (host.clustering)
METHODS = ("greedy", "single", "average", "complete")
#: orders of a plotted matrix, as ``--plot-order`` takes them (host.plot)
PLOT_ORDERS = ("dendrogram", "input")
#: trees of ``dist --tree`` (host.trees)
TREES = ("upgma", "nj")
#: the JSD matrix's arithmetics, as ``jsd --arithmetic`` takes them (host.jsdmatrix)
ARITHMETICS = ("float", "fixed")
