"""The post-route netlist preparation of sim/ecp5_bram.py and sim/ecp5_postroute.py on small
hand-made netlists in nextpnr's form (no tools run): a DP16KD's routing choices become
connections, and what the block RAM model does not model is refused by name rather than
simulated by guess. tests/test_ecp5_flow.py runs the model itself on a routed DP16KD."""

import copy

import pytest

from sim.ecp5_bram import DP16KD_MODEL, BramError, prepare_dp16kd, without_yosys_dp16kd
from sim.ecp5_postroute import EXTRA_MODELS, PostRouteError, as_simulated, undeclared_parameters

WIDTH_18 = format(18, "032b")


def dp16kd(**overrides):
    """A routed DP16KD as nextpnr writes it for Yosys's 1,024 x 18 mapping (the CI miniature's)."""
    params = {"DATA_WIDTH_A": WIDTH_18, "DATA_WIDTH_B": WIDTH_18, "REGMODE_A": "NOREG",
              "REGMODE_B": "NOREG", "WRITEMODE_A": "READBEFOREWRITE",
              "WRITEMODE_B": "READBEFOREWRITE", "RESETMODE": "ASYNC", "CSDECODE_A": "0b000",
              "CSDECODE_B": "0b000", "CEAMUX": "CEA", "CEBMUX": "CEB", "CLKAMUX": "CLKA",
              "WEBMUX": "INV", "RSTAMUX": "INV", "RSTBMUX": "INV", "ADA2MUX": "0 ",
              "INITVAL_00": "0" * 320,
              **{f"CS{p}{i}MUX": "INV" for p in "AB" for i in range(3)}}
    conns = {"CLKA": [10], "CLKB": [10], "WEA": [11], "CEA": [], "CEB": [], "WEB": [],
             "RSTA": [], "RSTB": [], "ADA2": [], **{f"CS{p}{i}": [] for p in "AB" for i in range(3)}}
    params.update(overrides.pop("params", {}))
    conns.update(overrides.pop("connections", {}))
    return {"type": "DP16KD", "parameters": params, "attributes": {},
            "port_directions": {pin: "input" for pin in conns}, "connections": conns}


def module(cell):
    return {"cells": {"bank.0.0": cell}, "netnames": {"clk": {"bits": [10]}, "we": {"bits": [11]}},
            "ports": {}}


def test_routing_choices_become_connections():
    m = module(dp16kd(params={"CEAMUX": "INV"}, connections={"CEA": [11]}))
    assert prepare_dp16kd(m) == 1
    cell = m["cells"]["bank.0.0"]
    c = cell["connections"]
    assert not [k for k in cell["parameters"] if k.endswith("MUX")]
    assert c["CEB"] == ["1"]                    # the pin itself, unconnected: high
    assert c["WEB"] == c["RSTA"] == c["RSTB"] == ["0"]   # INV of an unconnected pin
    assert c["ADA2"] == ["0"]                   # a constant ("0 ": Yosys's mark of a string)
    assert all(c[f"CS{p}{i}"] == ["0"] for p in "AB" for i in range(3))
    inverter = m["cells"]["bank.0.0.CEA_INV"]   # INV of a driven pin: an inverter cell
    assert inverter["type"] == "INV" and inverter["connections"]["A"] == [11]
    assert c["CEA"] == inverter["connections"]["Z"] and c["CEA"][0] not in (10, 11)
    assert c["CLKA"] == [10] and c["WEA"] == [11]


@pytest.mark.parametrize("change, message", [
    ({"params": {"REGMODE_A": "OUTREG"}}, "REGMODE_A = OUTREG"),
    ({"params": {"DATA_WIDTH_B": format(9, "032b")}}, "port widths 18 and 9"),
    ({"params": {"INITVAL_00": "1" + "0" * 319}}, "INITVAL_00 is not 0"),
    ({"params": {"CSA1MUX": "CSA1"}}, "chip select CSA1"),
    ({"params": {"RSTBMUX": "RSTB"}, "connections": {"RSTB": [11]}}, "RSTB is not held low"),
    ({"params": {"WEAMUX": "SOMETHING"}}, "WEAMUX = SOMETHING"),
])
def test_what_the_model_lacks_is_refused_by_name(change, message):
    with pytest.raises(BramError, match="bank.0.0") as e:
        prepare_dp16kd(module(dp16kd(**copy.deepcopy(change))))
    assert message in str(e.value)


def test_the_model_replaces_yosys_black_box_and_declares_what_the_netlist_sets():
    yosys = "module LUT4(input A); endmodule\nmodule DP16KD(\n input CLKA);\nendmodule\n"
    text = without_yosys_dp16kd(yosys) + DP16KD_MODEL
    assert text.count("module DP16KD(") == 1 and "module LUT4" in text
    routed = {"modules": {"top": module(dp16kd())}}
    assert undeclared_parameters(as_simulated(routed), text + EXTRA_MODELS) == {}
    routed["modules"]["top"]["cells"]["bank.0.0"]["parameters"]["NEW_KNOB"] = "1"
    # a parameter the router sets and no model declares is named (a simulator would ignore it)
    missing = undeclared_parameters(routed, text + EXTRA_MODELS)
    assert missing == {"DP16KD": ["ADA2MUX", "CEAMUX", "CEBMUX", "CLKAMUX", "CSA0MUX",
                                  "CSA1MUX", "CSA2MUX", "CSB0MUX", "CSB1MUX", "CSB2MUX",
                                  "NEW_KNOB", "RSTAMUX", "RSTBMUX", "WEBMUX"]}


def test_ramw_block_placeholders_are_left_out_and_a_driving_one_refused():
    placeholder = {"type": "TRELLIS_COMB", "parameters": {"MODE": "RAMW_BLOCK"}, "attributes": {},
                   "port_directions": {"F": "output", "A": "input"},
                   "connections": {"F": [], "A": []}}
    routed = {"modules": {"top": {"cells": {"slice$RAMW_BLOCK0": placeholder},
                                  "netnames": {}, "ports": {}}}}
    assert as_simulated(routed)["modules"]["top"]["cells"] == {}
    routed["modules"]["top"]["cells"]["slice$RAMW_BLOCK0"]["connections"]["F"] = [5]
    with pytest.raises(PostRouteError, match="RAMW_BLOCK0"):
        as_simulated(routed)


def test_pads_become_one_way_buffers_and_a_bidirectional_pad_is_refused():
    def pad(direction):
        return {"type": "TRELLIS_IO", "parameters": {"DIR": direction}, "attributes": {},
                "port_directions": {"B": "inout", "I": "input", "T": "input", "O": "output"},
                "connections": {"B": [2], "I": [3], "T": ["0"], "O": []}}
    routed = {"modules": {"top": {"cells": {"in": pad("INPUT"), "out": pad("OUTPUT")},
                                  "netnames": {}, "ports": {}}}}
    cells = as_simulated(routed)["modules"]["top"]["cells"]
    assert cells["in"]["type"] == "POSTROUTE_INPUT_PAD" and cells["in"]["connections"] == {
        "B": [2], "O": ["x"]}
    assert cells["out"]["type"] == "POSTROUTE_OUTPUT_PAD" and cells["out"]["connections"] == {
        "I": [3], "T": ["0"], "B": [2]}
    routed["modules"]["top"]["cells"]["in"]["parameters"]["DIR"] = "BIDIR"
    with pytest.raises(PostRouteError, match="direction BIDIR"):
        as_simulated(routed)
