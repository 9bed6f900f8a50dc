"""The rules of the AXI4 protocol monitor (sim/axi_monitor.py, on every m_axi port of every kernel
bench, and behind the Amaranth slave models of tests/axi_slave.py) without a simulator: each
broken rule is reported, naming it, a legal trace is not."""

import pytest

from sim.axi_monitor import PAYLOADS, AxiProtocolError, ProtocolRules

IDLE = {channel: False for channel in PAYLOADS}


def address(addr=0x1000, length=3):
    return {"ADDR": addr, "LEN": length, "SIZE": 6, "BURST": 1, "ID": 0, "LOCK": 0, "CACHE": 3,
            "PROT": 0, "QOS": 0, "REGION": 0}


def cycle(rules, valid=(), ready=(), **payload):
    """One cycle: the channels in ``valid`` offer ``payload[channel]``; those in ``ready`` are
    ready."""
    return rules.step({ch: ch in valid for ch in PAYLOADS}, {ch: ch in ready for ch in PAYLOADS},
                      {ch: payload.get(ch) for ch in PAYLOADS})


def w(data=0, strobe=0xFFFF, last=0):
    return {"DATA": data, "STRB": strobe, "LAST": last}


def r(last=0, resp=0, ident=0, data=0):
    return {"DATA": data, "RESP": resp, "LAST": last, "ID": ident}


def test_a_legal_trace_passes_and_its_bursts_are_accounted():
    rules = ProtocolRules(64)
    cycle(rules, ["AR"], [], AR=address(length=1))          # stalled, then held
    cycle(rules, ["AR"], ["AR"], AR=address(length=1))
    cycle(rules, ["R"], [], R=r(last=0, data=7))            # RREADY low: the slave holds
    assert rules.owed() == (2, 0, 0, 0)
    cycle(rules, ["R"], ["R"], R=r(last=0, data=7))
    cycle(rules, ["R"], ["R"], R=r(last=1, data=8))
    cycle(rules, ["AW"], ["AW"], AW=address(length=1))
    cycle(rules, ["W"], [], W=w(1))
    cycle(rules, ["W"], ["W"], W=w(1))
    cycle(rules, ["W"], ["W"], W=w(2, 0x00FF, 1))
    assert rules.owed() == (0, 0, 1, 0)
    cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})
    assert rules.owed() == (0, 0, 0, 0) and not rules.errors
    rules.settled()


@pytest.mark.parametrize("channel", ["AR", "AW"])
def test_an_address_valid_withdrawn_before_ready_fails(channel):
    rules = ProtocolRules(64)
    cycle(rules, [channel], [], **{channel: address()})
    with pytest.raises(AxiProtocolError, match=f"AXI4_ERRM_{channel}VALID_STABLE \\(A3.2.1\\): "
                                               f"{channel}VALID fell before {channel}READY"):
        cycle(rules, [], [])


@pytest.mark.parametrize("channel", ["AR", "AW"])
def test_an_address_changed_before_ready_fails(channel):
    rules = ProtocolRules(64)
    cycle(rules, [channel], [], **{channel: address(length=3)})
    with pytest.raises(AxiProtocolError, match=f"AXI4_ERRM_{channel}LEN_STABLE .*{channel} "
                                               f"payload changed .*LEN 0x3 -> 0x0"):
        cycle(rules, [channel], [channel], **{channel: address(length=0)})


def test_wstrb_changed_on_an_offered_beat_fails():
    """The old writer's abort: the beat on offer loses its byte strobes."""
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=1))
    cycle(rules, ["W"], [], W=w(5, 0xFFFF))
    with pytest.raises(AxiProtocolError, match="W payload changed .*STRB 0xffff -> 0x0"):
        cycle(rules, ["W"], ["W"], W=w(5, 0))


@pytest.mark.parametrize("channel, payload", [("R", r(1)), ("B", {"RESP": 0, "ID": 0})])
def test_the_slave_side_is_held_too(channel, payload):
    rules = ProtocolRules(64)
    cycle(rules, ["AR", "AW"], ["AR", "AW"], AR=address(length=0), AW=address(length=0))
    cycle(rules, ["W"], ["W"], W=w(last=1))
    cycle(rules, [channel], [], **{channel: payload})
    with pytest.raises(AxiProtocolError, match=f"{channel}VALID fell"):
        cycle(rules, [], [])


def test_rlast_wlast_and_unowed_beats_fail():
    rules = ProtocolRules(64)
    cycle(rules, ["AR"], ["AR"], AR=address(length=1))
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_RDATA_NUM .*RLAST=1 with 2 beats"):
        cycle(rules, ["R"], ["R"], R=r(last=1))
    rules = ProtocolRules(64)
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_RID .*an R beat no outstanding AR"):
        cycle(rules, ["R"], ["R"], R=r(last=1))
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=0))
    with pytest.raises(AxiProtocolError, match="AXI4_ERRM_WDATA_NUM .*WLAST=0 on beat 1 of a "
                                               "1-beat AW burst"):
        cycle(rules, ["W"], ["W"], W=w(last=0))
    rules = ProtocolRules(64)
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_BRESP_WLAST .*a B response before"):
        cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})


def test_a_b_response_in_the_cycle_of_the_last_w_beat_fails():
    """A3.3.1: BVALID after the last W handshake, not in its cycle (AMD's checker reports it as
    AXI_ERRS_BRESP_AW/WLAST; a memory port that answered a refused burst at once did it)."""
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=0))
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_BRESP_WLAST"):
        cycle(rules, ["W", "B"], ["W", "B"], W=w(1, last=1), B={"RESP": 0, "ID": 0})
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=0))
    cycle(rules, ["W"], ["W"], W=w(1, last=1))
    cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})
    assert not rules.errors


def test_w_beats_before_their_aw_are_legal_and_checked_when_it_comes():
    """A3.3.1: W may lead AW; the early beats are matched to the AWs in order."""
    rules = ProtocolRules(64)
    cycle(rules, ["W"], ["W"], W=w(1))
    cycle(rules, ["W"], ["W"], W=w(2, last=1))
    cycle(rules, ["W"], ["W"], W=w(3, last=1))             # a one-beat burst, AW to come
    assert rules.owed() == (0, 0, 0, 3)
    cycle(rules, ["AW"], ["AW"], AW=address(length=1))
    assert rules.owed() == (0, 0, 1, 1)
    cycle(rules, ["AW", "B"], ["AW", "B"], AW=address(0x2000, length=0), B={"RESP": 0, "ID": 0})
    cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})
    rules.settled()


def test_a_w_beat_before_its_aw_with_a_wrong_wlast_fails_when_the_aw_comes():
    rules = ProtocolRules(64)
    cycle(rules, ["W"], ["W"], W=w(1, last=1))             # WLAST on beat 1 of 2
    with pytest.raises(AxiProtocolError, match="WLAST=1 on beat 1 of a 2-beat AW burst \\(a W "
                                               "beat that came before its AW\\)"):
        cycle(rules, ["AW"], ["AW"], AW=address(length=1))


def test_a_surplus_w_beat_fails_the_settled_check():
    """A W beat after a burst's WLAST with no AW to come is owed an AW forever."""
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=0))
    cycle(rules, ["W"], ["W"], W=w(last=1))
    cycle(rules, ["W"], ["W"], W=w(last=1))                # the surplus beat
    cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})
    assert rules.owed() == (0, 0, 0, 1)
    with pytest.raises(AxiProtocolError, match="AXI4_ERRM_WDATA_NUM .*1 W beat that no AW burst "
                                               "claims"):
        rules.settled()


@pytest.mark.parametrize("channel, fields, rule", [
    ("AR", {"ADDR": 0x1FC0, "LEN": 1}, "AXI4_ERRM_ARADDR_BOUNDARY .*crosses 4 KiB"),
    ("AW", {"ADDR": 0x1FC0, "LEN": 1}, "AXI4_ERRM_AWADDR_BOUNDARY .*crosses 4 KiB"),
    ("AW", {"BURST": 2}, "KERNEL_AWBURST .*INCR"),
    ("AR", {"SIZE": 5}, "KERNEL_ARSIZE .*full-width"),
    ("AW", {"SIZE": 7}, "AXI4_ERRM_AWSIZE .*wider than the 64-byte bus"),
    ("AR", {"ADDR": 0x1004}, "KERNEL_ARADDR_ALIGN .*unaligned 0x1004"),
])
def test_every_burst_rule_is_fatal(channel, fields, rule):
    rules = ProtocolRules(64)
    with pytest.raises(AxiProtocolError, match=rule):
        cycle(rules, [channel], [channel], **{channel: {**address(), **fields}})
    assert len(rules.errors) == 1


def test_reset_forgets_a_stalled_offer():
    rules = ProtocolRules(64)
    cycle(rules, ["AR"], [], AR=address())
    rules.reset_cycle(dict(IDLE))
    cycle(rules, [], [])
    assert not rules.errors and rules.owed() == (0, 0, 0, 0)


@pytest.mark.parametrize("channel", ["AR", "AW", "W", "R", "B"])
def test_a_valid_high_in_reset_fails(channel):
    """A3.1.2: from the first cycle ARESETn is low, the master's and (reset with it) the slave's
    VALIDs are low."""
    rules = ProtocolRules(64)
    side = "ERRM" if channel in ("AR", "AW", "W") else "ERRS"
    with pytest.raises(AxiProtocolError, match=f"AXI4_{side}_{channel}VALID_RESET \\(A3.1.2\\)"):
        rules.reset_cycle({**IDLE, channel: True})


def test_a_master_reset_alone_leaves_the_slave_owing():
    """Only the master is reset (``slave_reset`` False): the slave's RVALID may stay high, but
    the master takes none of what the slave owed from before the reset."""
    rules = ProtocolRules(64, slave_reset=False)
    cycle(rules, ["AR", "AW"], ["AR", "AW"], AR=address(length=3), AW=address(length=1))
    cycle(rules, ["R", "W"], ["R", "W"], R=r(), W=w())
    rules.reset_cycle({**IDLE, "R": True})
    assert rules.stale == (3, 0, 1)
    cycle(rules, ["R"], [], R=r())
    with pytest.raises(AxiProtocolError, match="A3.1.2: an R beat taken that the slave owed"):
        cycle(rules, ["R"], ["R"], R=r())
    rules.slave_was_reset()
    assert rules.stale == (0, 0, 0)


# -- AXI4-Lite, READY in reset, the firewall's waits, WSTRB values ---------------------------

def lite_cycle(rules, valid=(), ready=(), **payload):
    return rules.step({ch: ch in valid for ch in PAYLOADS}, {ch: ch in ready for ch in PAYLOADS},
                      {ch: payload.get(ch) for ch in PAYLOADS})


def test_lite_writes_and_reads_are_one_beat_each_and_each_gets_its_response():
    rules = ProtocolRules(4, "s_axi_control", lite=True)
    lite_cycle(rules, ["AW", "W"], ["AW", "W"], AW={"ADDR": 0x10}, W={"DATA": 1, "STRB": 0xF})
    lite_cycle(rules, ["AW", "W", "B"], ["AW", "W"], AW={"ADDR": 0x14},
               W={"DATA": 2, "STRB": 0xF}, B={"RESP": 0})
    assert rules.owed() == (0, 0, 2, 0)
    lite_cycle(rules, ["B", "AR"], ["B", "AR"], B={"RESP": 0}, AR={"ADDR": 0x10})
    lite_cycle(rules, ["R"], [], R={"DATA": 1, "RESP": 0})
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_BRESP_ALL_DONE_EOS: 1 write bursts"):
        rules.settled()          # two posted writes, one B so far (the M9 mutant)
    rules = ProtocolRules(4, "s_axi_control", lite=True)
    lite_cycle(rules, ["AR"], ["AR"], AR={"ADDR": 0x10})
    lite_cycle(rules, ["R", "AR"], [], R={"DATA": 1, "RESP": 0}, AR={"ADDR": 0x14})
    with pytest.raises(AxiProtocolError, match="AXI4_ERRS_RDATA_STABLE .*DATA 0x1 -> 0x2"):
        lite_cycle(rules, ["R", "AR"], ["R"], R={"DATA": 2, "RESP": 0}, AR={"ADDR": 0x14})


@pytest.mark.parametrize("channel", ["AR", "AW", "W"])
def test_the_slaves_readies_low_in_reset_and_in_the_first_edge_after_it(channel):
    rules = ProtocolRules(4, lite=True, reset_readies=("AR", "AW", "W"))
    with pytest.raises(AxiProtocolError, match=f"KERNEL_{channel}READY_RESET .*high while "
                                               f"ARESETn is low"):
        rules.reset_cycle(dict(IDLE), {**IDLE, channel: True})
    rules = ProtocolRules(4, lite=True, reset_readies=("AR", "AW", "W"))
    rules.reset_cycle(dict(IDLE), dict(IDLE))
    assert rules.needs_ready_levels
    with pytest.raises(AxiProtocolError, match=f"XILINX_{channel}READY_RESET \\(PG101\\)"):
        lite_cycle(rules, [], [channel])
    # the edge after that one may take a transfer
    rules = ProtocolRules(4, lite=True, reset_readies=("AR", "AW", "W"))
    rules.reset_cycle(dict(IDLE), dict(IDLE))
    lite_cycle(rules, [], [])
    assert not rules.needs_ready_levels
    lite_cycle(rules, [], [channel])


@pytest.mark.parametrize("rule, trace", [
    ("RECS_AWREADY_MAX_WAIT", lambda rules: [lite_cycle(rules, ["AW"], [], AW={"ADDR": 0})
                                             for _ in range(4)]),
    ("RECM_BREADY_MAX_WAIT", lambda rules: [
        lite_cycle(rules, ["AW", "W"], ["AW", "W"], AW={"ADDR": 0}, W={"DATA": 0, "STRB": 1}),
        *[lite_cycle(rules, ["B"], [], B={"RESP": 0}) for _ in range(4)]]),
    ("RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT", lambda rules: [
        lite_cycle(rules, ["AR"], ["AR"], AR={"ADDR": 0}), *[lite_cycle(rules) for _ in range(4)]]),
    ("RECS_WRITE_TO_BVALID_MAX_WAIT", lambda rules: [
        lite_cycle(rules, ["AW", "W"], ["AW", "W"], AW={"ADDR": 0}, W={"DATA": 0, "STRB": 1}),
        *[lite_cycle(rules) for _ in range(4)]]),
    ("RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT", lambda rules: [
        lite_cycle(rules, ["AW"], ["AW"], AW={"ADDR": 0}), *[lite_cycle(rules) for _ in range(4)]]),
    ("RECM_WVALID_TO_AWVALID_MAX_WAIT", lambda rules: [
        lite_cycle(rules, ["W"], ["W"], W={"DATA": 0, "STRB": 1}),
        *[lite_cycle(rules) for _ in range(4)]]),
])
def test_each_firewall_wait_fails_one_cycle_past_its_limit(rule, trace):
    """PG293's timeouts with a limit of 2 cycles: a wait of 2 passes, the third cycle fails."""
    rules = ProtocolRules(4, lite=True, waits={rule: 2})
    with pytest.raises(AxiProtocolError, match=f"{rule} \\(AXI firewall, PG293; limit 2\\): "
                                               f".*3 cycles"):
        trace(rules)
    assert len(rules.errors) == 1
    with pytest.raises(ValueError, match="unknown wait rules"):
        ProtocolRules(4, waits={"RECM_NOTHING": 1})


def test_wstrb_values_against_the_bytes_of_the_writes():
    """Exact: the writer's commands (the last beat of 0x1000 + 70 bytes has 6 bytes). Within:
    a kernel's output buffers, all ones but a burst's last beat, which may end early."""
    rules = ProtocolRules(64)
    rules.expect_writes([(0x1000, 70)])
    cycle(rules, ["AW"], ["AW"], AW=address(0x1000, length=1))
    cycle(rules, ["W"], ["W"], W=w(strobe=(1 << 64) - 1))
    with pytest.raises(AxiProtocolError, match="KERNEL_WSTRB .*WSTRB 0xff on the beat at "
                                               "0x1040; the bytes it should write are 0x3f"):
        cycle(rules, ["W"], ["W"], W=w(strobe=0xFF, last=1))
    rules = ProtocolRules(64)
    rules.expect_writes([], exact=False)
    rules.add_expected_write(0x1000, 128)
    cycle(rules, ["W"], ["W"], W=w(strobe=(1 << 64) - 1))          # before its AW
    cycle(rules, ["W"], ["W"], W=w(strobe=0xF, last=1))            # ends early: legal
    cycle(rules, ["AW"], ["AW"], AW=address(0x1000, length=1))
    cycle(rules, ["AW"], ["AW"], AW=address(0x1040, length=1))
    with pytest.raises(AxiProtocolError, match="KERNEL_WSTRB .*WSTRB 0xf on the beat at 0x1040"):
        cycle(rules, ["W"], ["W"], W=w(strobe=0xF))                # not the burst's last beat
    rules = ProtocolRules(64)
    rules.expect_writes([(0x1000, 64)], exact=False)
    cycle(rules, ["AW"], ["AW"], AW=address(0x1000, length=1))
    cycle(rules, ["W"], ["W"], W=w(strobe=(1 << 64) - 1))
    with pytest.raises(AxiProtocolError, match="KERNEL_WSTRB .*beat at 0x1040; the bytes of the "
                                               "outputs there are 0x0"):
        cycle(rules, ["W"], ["W"], W=w(strobe=0x1, last=1))         # past the output


@pytest.mark.parametrize("rule, owe", [
    ("RECS_CONTINUOUS_RTRANSFERS_MAX_WAIT", lambda rules: lite_cycle(rules, ["AR"], ["AR"],
                                                                     AR={"ADDR": 0})),
    ("RECS_WRITE_TO_BVALID_MAX_WAIT", lambda rules: lite_cycle(
        rules, ["AW", "W"], ["AW", "W"], AW={"ADDR": 0}, W={"DATA": 0, "STRB": 1})),
    ("RECM_CONTINUOUS_WTRANSFERS_MAX_WAIT", lambda rules: lite_cycle(rules, ["AW"], ["AW"],
                                                                     AW={"ADDR": 0})),
    ("RECM_WVALID_TO_AWVALID_MAX_WAIT", lambda rules: lite_cycle(
        rules, ["W"], ["W"], W={"DATA": 0, "STRB": 1})),
])
def test_the_idle_shortcut_counts_the_waits_for_a_valid(rule, owe):
    """``idle_cycle`` (the monitor's cycles without any VALID) times them as ``step`` with
    every VALID low does: the same cycle fails."""
    failed = []
    for shortcut in (False, True):
        rules = ProtocolRules(4, lite=True, waits={rule: 2})
        owe(rules)
        with pytest.raises(AxiProtocolError, match=f"{rule} .*limit 2"):
            for _ in range(10):
                rules.idle_cycle() if shortcut else lite_cycle(rules)
        failed.append(rules.cycle)
    assert failed[0] == failed[1] <= 4, failed
