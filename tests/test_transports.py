"""The two transports carry the same messages for every pattern and ledger them alike."""

import pytest

from comm_patterns import run_patterns_in_process, run_patterns_on_gloo
from thinwire.comm import Ledger, NetworkModel, network_preset
from thinwire.experiment.launch import free_port


def test_in_process_patterns_deliver_every_message():
    seen, rows = run_patterns_in_process()
    patterns = {s[0] for s in seen}
    assert patterns == {"star-push", "star-pull", "sharded", "ring", "control"}
    assert len(rows) == sum(1 for _ in seen)  # every message ledgered exactly once
    ring = [s for s in seen if s[0] == "ring"]
    assert 0 < len(ring) < 3 * 4 * 2 * 2  # some tensors are not sent in some rounds


def test_gloo_with_four_processes_matches_in_process():
    seen, rows = run_patterns_in_process()
    results = run_patterns_on_gloo(4, free_port())
    gathered = sorted(s for _, part, _ in results for s in part)
    assert gathered == sorted(seen)
    for _, _, merged_rows in results:
        assert merged_rows == rows


def test_network_model_incast_and_presets():
    net = NetworkModel("test", bandwidth_bytes_per_s=1000.0, latency_s=0.5)
    # four workers push 100 bytes each to a server: its link receives 400 bytes
    assert net.phase_seconds([(k, 4, 100) for k in range(4)]) == pytest.approx(0.5 + 0.4)
    # a ring: every node sends and receives 100 bytes in parallel
    assert net.phase_seconds([(k, (k + 1) % 4, 100) for k in range(4)]) == pytest.approx(0.5 + 0.1)
    assert net.phase_seconds([(2, 2, 10**9)]) == 0.0  # to oneself: no network
    ledger = Ledger()
    ledger.record(0, "push", 0, 1, "w", 1000)
    ledger.record(1, "push", 0, 1, "w", 2000)
    assert list(net.seconds_per_step(ledger, 2)) == pytest.approx([1.5, 2.5])
    assert network_preset("pcie3_x16").bandwidth_bytes_per_s == 15.75e9
    assert network_preset("ethernet_10g").bandwidth_bytes_per_s == 1.25e9
    assert network_preset("infiniband_56g").bandwidth_bytes_per_s == 7e9
    assert network_preset("net_10mbs").bandwidth_bytes_per_s == 10e6
    with pytest.raises(ValueError, match="network must be one of"):
        network_preset("carrier_pigeon")
