"""The rules of the cocotb AXI4 protocol monitor (sim/axi_monitor.py, on every m_axi port of every
kernel bench) without a simulator: each broken rule is reported, a legal trace is not."""

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
    assert rules.owed() == (2, 0, 0)
    cycle(rules, ["R"], ["R"], R=r(last=0, data=7))
    cycle(rules, ["R"], ["R"], R=r(last=1, data=8))
    cycle(rules, ["AW"], ["AW"], AW=address(length=1))
    cycle(rules, ["W"], [], W=w(1))
    cycle(rules, ["W"], ["W"], W=w(1))
    cycle(rules, ["W"], ["W"], W=w(2, 0x00FF, 1))
    assert rules.owed() == (0, 0, 1)
    cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})
    assert rules.owed() == (0, 0, 0) and not rules.errors


@pytest.mark.parametrize("channel", ["AR", "AW"])
def test_an_address_valid_withdrawn_before_ready_fails(channel):
    rules = ProtocolRules(64)
    cycle(rules, [channel], [], **{channel: address()})
    with pytest.raises(AxiProtocolError, match=f"{channel}VALID fell before {channel}READY"):
        cycle(rules, [], [])


@pytest.mark.parametrize("channel", ["AR", "AW"])
def test_an_address_changed_before_ready_fails(channel):
    rules = ProtocolRules(64)
    cycle(rules, [channel], [], **{channel: address(length=3)})
    with pytest.raises(AxiProtocolError, match=f"{channel} payload changed .*LEN 0x3 -> 0x0"):
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
    with pytest.raises(AxiProtocolError, match="RLAST=1 with 2 beats"):
        cycle(rules, ["R"], ["R"], R=r(last=1))
    rules = ProtocolRules(64)
    with pytest.raises(AxiProtocolError, match="an R beat no AR burst owes"):
        cycle(rules, ["R"], ["R"], R=r(last=1))
    rules = ProtocolRules(64)
    cycle(rules, ["AW"], ["AW"], AW=address(length=0))
    with pytest.raises(AxiProtocolError, match="WLAST=0 with 1 beats"):
        cycle(rules, ["W"], ["W"], W=w(last=0))
    rules = ProtocolRules(64)
    with pytest.raises(AxiProtocolError, match="a B response no completed burst owes"):
        cycle(rules, ["B"], ["B"], B={"RESP": 0, "ID": 0})


def test_burst_rules_are_collected():
    rules = ProtocolRules(64)
    cycle(rules, ["AR"], ["AR"], AR=address(addr=0x1FC0, length=1))
    assert rules.errors == ["axi cycle 0: AR 0x1fc0 len 2 crosses 4 KiB"]


def test_reset_forgets_a_stalled_offer():
    rules = ProtocolRules(64)
    cycle(rules, ["AR"], [], AR=address())
    rules.reset()
    cycle(rules, [], [])
    assert not rules.errors and rules.owed() == (0, 0, 0)
