"""The ECP5 block RAM (DP16KD) in simulation after routing: Yosys's ``cells_sim.v`` declares
DP16KD's ports and parameters but gives it no behaviour (a black box), so a routed design with
block RAM (the sketch core's register banks at p = 14) needs the model here.

What it models is what Yosys's mapping (``share/lattice/brams_16kd.txt`` and
``brams_map_16kd.v``: the ``$__DP16KD_`` cell) produces and nextpnr routes, and no more; anything
else in a routed netlist is refused by name (:func:`prepare_dp16kd`), never simulated by guess:

* 1,024 rows of 18 bits; a port of ``DATA_WIDTH`` 18 writes the row ``AD[13:4]``, one 9-bit half
  per byte enable (``AD[0]`` bits 8:0, ``AD[1]`` bits 17:9: Yosys's ``WR_BE``); a port of width
  1, 2, 4 or 9 addresses its word within the row by ``AD[3:0]`` (``AD[3]`` for 9, ``AD[3:2]`` for
  4, ...), data on ``DI``/``DO`` bits ``[width-1:0]``. Both ports must have the same width (a
  mixed-width layout is not modelled);
* on a rising clock edge with ``CE``: a write (``WE``) stores; the read data is the old word
  (``WRITEMODE`` READBEFOREWRITE), the new one (WRITETHROUGH) or unchanged (NORMAL); without
  ``WE`` it is the word at the address. ``REGMODE`` NOREG (Yosys maps no other), read data 0 after
  configuration (``rdinit zero``);
* contents 0 after configuration: every ``INITVAL_xx`` must be 0 (the sketch core's banks are
  cleared by the design itself), ``CS`` pins must select the RAM and ``RST`` must stay low (the
  mapping ties both off), as constants.

nextpnr writes each input's routing choice as a parameter ``<pin>MUX``: the pin itself, ``INV``
(the pin inverted; an unconnected pin is high, as nextpnr takes it) or a constant ``0``/``1``;
:func:`prepare_dp16kd` turns these into connections (an ``INV`` cell where the pin is driven).
"""

__all__ = ["DP16KD_MODEL", "prepare_dp16kd", "without_yosys_dp16kd", "BramError"]


class BramError(ValueError):
    pass


def _port_model(p):
    """The always block of port ``p`` ("A" or "B") of :data:`DP16KD_MODEL`."""
    return f"""
    wire [13:0] ad{p} = {{{", ".join(f"AD{p}{i}" for i in range(13, -1, -1))}}};
    wire [17:0] di{p} = {{{", ".join(f"DI{p}{i}" for i in range(17, -1, -1))}}};
    reg [17:0] do{p} = 18'd0;
    assign {{{", ".join(f"DO{p}{i}" for i in range(17, -1, -1))}}} = do{p};
    localparam SHIFT_{p} = DATA_WIDTH_{p} == 1 ? 0 : DATA_WIDTH_{p} == 2 ? 1 :
                           DATA_WIDTH_{p} == 4 ? 2 : 3;
    wire [9:0] row_{p} = ad{p}[13:4];
    localparam [17:0] WORD_MASK_{p} = (18'd1 << DATA_WIDTH_{p}) - 18'd1;
    wire [4:0] pos_{p} = (ad{p}[3:0] >> SHIFT_{p}) * DATA_WIDTH_{p};
    wire [17:0] old_{p} = rows[row_{p}];
    wire [17:0] word_{p} = DATA_WIDTH_{p} == 18 ? old_{p} : (old_{p} >> pos_{p}) & WORD_MASK_{p};
    wire [17:0] written_{p} = DATA_WIDTH_{p} == 18
        ? {{ad{p}[1] ? di{p}[17:9] : old_{p}[17:9], ad{p}[0] ? di{p}[8:0] : old_{p}[8:0]}}
        : (old_{p} & ~(WORD_MASK_{p} << pos_{p})) | ((di{p} & WORD_MASK_{p}) << pos_{p});
    always @(posedge CLK{p}) if (CE{p}) begin
        if (WE{p}) begin
            rows[row_{p}] <= written_{p};
            if (WRITEMODE_{p} == "READBEFOREWRITE")
                do{p} <= word_{p};
            else if (WRITEMODE_{p} == "WRITETHROUGH")
                do{p} <= DATA_WIDTH_{p} == 18 ? written_{p} : (written_{p} >> pos_{p}) & WORD_MASK_{p};
        end else
            do{p} <= word_{p};
    end
"""


def _ports(p):
    return (f"input {', '.join(f'DI{p}{i}' for i in range(17, -1, -1))},\n"
            f"    input {', '.join(f'AD{p}{i}' for i in range(13, -1, -1))},\n"
            f"    input CE{p}, OCE{p}, CLK{p}, WE{p}, RST{p}, CS{p}2, CS{p}1, CS{p}0,\n"
            f"    output {', '.join(f'DO{p}{i}' for i in range(17, -1, -1))}")


#: the DP16KD model (Verilog), the parameters it declares being those Yosys's black box declares
#: and the mapping sets once :func:`prepare_dp16kd` has removed the routing choices
DP16KD_MODEL = f"""
module DP16KD(
    {_ports("A")},
    {_ports("B")}
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter RESETMODE = "SYNC";
    parameter ASYNC_RESET_RELEASE = "SYNC";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter WID = 0;
    parameter GSR = "ENABLED";
    parameter INIT_DATA = "STATIC";
{"".join(f"    parameter [319:0] INITVAL_{i:02X} = 320'd0;{chr(10)}" for i in range(64))}
    reg [17:0] rows [0:1023];
    integer r;
    initial for (r = 0; r < 1024; r = r + 1) rows[r] = 18'd0;
{_port_model("A")}{_port_model("B")}endmodule
"""

_SUPPORTED = {"REGMODE_A": {"NOREG"}, "REGMODE_B": {"NOREG"},
              "WRITEMODE_A": {"NORMAL", "WRITETHROUGH", "READBEFOREWRITE"},
              "WRITEMODE_B": {"NORMAL", "WRITETHROUGH", "READBEFOREWRITE"}}


def _value(v) -> str:
    # Yosys's JSON marks a string that reads as binary digits with a trailing space
    return str(v).rstrip(" ") if isinstance(v, str) else str(v)


def _number(v) -> int:
    v = _value(v)
    return int(v, 2) if set(v) <= {"0", "1"} and v else int(v)


def _constant(bits):
    return bits and all(b in ("0", "1") for b in bits)


def prepare_dp16kd(module: dict) -> int:
    """Make every DP16KD of the (routed) ``module`` what :data:`DP16KD_MODEL` simulates, in place:
    routing choices (``<pin>MUX``) become connections; unsupported settings raise
    :class:`BramError` naming the cell. Returns the number of DP16KD cells."""
    cells = module["cells"]
    new_cells, count = {}, 0
    next_bit = 1 + max((b for net in module["netnames"].values() for b in net["bits"]
                        if isinstance(b, int)), default=1)
    for name, cell in cells.items():
        if cell["type"] != "DP16KD":
            continue
        count += 1
        params, conns, dirs = cell["parameters"], cell["connections"], cell["port_directions"]
        for key in [k for k in params if k.endswith("MUX")]:
            pin, choice = key[:-3], _value(params.pop(key))
            bits = conns.get(pin) or []
            if choice == pin:
                if not bits:
                    conns[pin] = ["1"]         # unconnected: high, as nextpnr takes it
            elif choice in ("0", "1"):
                conns[pin] = [choice]
            elif choice == "INV":
                if not bits or _constant(bits):
                    level = bits[0] if bits else "1"
                    conns[pin] = ["0" if level == "1" else "1"]
                else:
                    out = next_bit
                    next_bit += 1
                    new_cells[f"{name}.{pin}_INV"] = {
                        "type": "INV", "parameters": {}, "attributes": {},
                        "port_directions": {"A": "input", "Z": "output"},
                        "connections": {"A": bits, "Z": [out]}}
                    conns[pin] = [out]
            else:
                raise BramError(f"{name}: {key} = {choice}, a routing choice the model lacks")
            dirs[pin] = "input"
        for key, allowed in _SUPPORTED.items():
            if _value(params.get(key, "NOREG" if "REG" in key else "NORMAL")) not in allowed:
                raise BramError(f"{name}: {key} = {_value(params[key])}, which the model lacks")
        width_a, width_b = (_number(params.get(f"DATA_WIDTH_{p}", 18)) for p in "AB")
        if width_a != width_b or width_a not in (1, 2, 4, 9, 18):
            raise BramError(f"{name}: port widths {width_a} and {width_b} (the model has equal "
                            "widths of 1, 2, 4, 9 or 18)")
        # an integer parameter is a string of binary digits in Yosys's JSON ("18" would be text)
        params["DATA_WIDTH_A"] = params["DATA_WIDTH_B"] = format(width_a, "032b")
        for key in [k for k in params if k.startswith("INITVAL_")]:
            if _number(params[key]):
                raise BramError(f"{name}: {key} is not 0 (the model starts empty)")
        for p in "AB":
            decode = _value(params.get(f"CSDECODE_{p}", "0b000")).removeprefix("0b")
            for i in range(3):
                level = conns.get(f"CS{p}{i}") or []
                if level != [decode[2 - i]]:
                    raise BramError(f"{name}: chip select CS{p}{i} is {level or 'unconnected'}, "
                                    f"not the constant CSDECODE_{p} selects")
            if (conns.get(f"RST{p}") or []) != ["0"]:
                raise BramError(f"{name}: RST{p} is not held low")
    cells.update(new_cells)
    return count


def without_yosys_dp16kd(models_text: str) -> str:
    """Yosys's model source without its DP16KD black box (which :data:`DP16KD_MODEL` replaces)."""
    start = models_text.find("module DP16KD(")
    if start < 0:
        return models_text
    end = models_text.index("endmodule", start) + len("endmodule")
    return models_text[:start] + models_text[end:]
