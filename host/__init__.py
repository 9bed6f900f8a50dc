"""Host side of the k-mer sketch accelerator: fast backend, I/O, sketch files, drivers, CLI."""

__version__ = "0.1.0"
