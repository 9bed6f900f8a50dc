"""Host side of the k-mer sketch accelerator: golden model, fast backend, I/O, CLI."""

__version__ = "0.1.0"
