"""In-memory layouts shared by the RTL tests and the host drivers (one module per kernel)."""
