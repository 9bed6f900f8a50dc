"""Small kernels that exercise the shared Vitis infrastructure (see hw/vitis)."""
