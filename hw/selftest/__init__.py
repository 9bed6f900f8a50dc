"""The standalone self-test of the JACC sketch core (kmerspec/selftest.py): on-chip input,
on-chip checksum, result on LEDs; built for a board by hw/selftest/board.py."""
