"""cocotb testbench and test data of the JACC similarity kernel."""
