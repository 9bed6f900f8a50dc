"""Parameter checks shared by the motif components (messages name the parameter and value)."""

__all__ = ["check_int", "check_read_latency"]


def check_int(name: str, value, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
    return value


def check_read_latency(value) -> int:
    """Counter-memory read latency: 1 (BRAM latch only) or 2 (with the BRAM output register)."""
    return check_int("read_latency", value, 1, 2)
