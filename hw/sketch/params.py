"""Parameter checks shared by the sketch components (messages name the parameter and value)."""

__all__ = ["check_positive", "check_k", "check_hll_params"]


def check_positive(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


def check_k(k) -> None:
    if not isinstance(k, int) or not 1 <= k <= 32:
        raise ValueError(f"k must be an integer from 1 to 32, not {k!r}")


def check_hll_params(p, w) -> None:
    if not isinstance(p, int) or not 8 <= p <= 18:
        raise ValueError(f"p must be an integer from 8 to 18, not {p!r}")
    if not isinstance(w, int) or not 4 <= w <= 8:
        raise ValueError(f"w must be an integer from 4 to 8, not {w!r}")
