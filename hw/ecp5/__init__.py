"""The sketch core's self-test through the open Lattice ECP5 flow (Yosys, nextpnr-ecp5, ecppack
from YoWASP): bitstream and nextpnr report (:mod:`.flow`), simulation of the routed netlist
(:mod:`.postroute`), the project's timing estimate beside the router's (:mod:`.estimate`)."""
