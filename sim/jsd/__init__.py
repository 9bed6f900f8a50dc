"""cocotb testbenches and shared test helpers of the JSD kernels."""
