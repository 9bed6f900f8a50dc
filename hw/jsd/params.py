"""Parameter checks shared by the JSD components (messages name the parameter and value)."""

__all__ = ["check_int_range"]


def check_int_range(name: str, value, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
