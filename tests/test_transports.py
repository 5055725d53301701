"""The two transports carry the same messages for every pattern and ledger them alike."""

import pytest

from comm_patterns import run_patterns_in_process, run_patterns_on_gloo
from thinwire.comm import Ledger, NetworkModel, canonical_network, network_preset
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
    ledger.record(0, "push", 0, 1, "w", 1000, 900)
    ledger.record(1, "push", 0, 1, "w", 2000, 1900)
    assert list(net.seconds_per_step(ledger, 2)) == pytest.approx([1.5, 2.5])
    assert network_preset("pcie3_x16").bandwidth_bytes_per_s == 15.75e9
    assert network_preset("ethernet_10g").bandwidth_bytes_per_s == 1.25e9
    assert network_preset("infiniband_56g").bandwidth_bytes_per_s == 7e9
    assert network_preset("net_10mbs").bandwidth_bytes_per_s == 10e6
    with pytest.raises(ValueError, match="network must be one of"):
        network_preset("carrier_pigeon")


def test_per_message_latency_counts_messages_at_the_busiest_node():
    net = NetworkModel("test", bandwidth_bytes_per_s=1000.0, latency_s=0.5, message_latency_s=0.01)
    # the server receives 4 messages of 100 bytes: 0.4 s of bytes + 4 x 0.01 s
    assert net.phase_seconds([(k, 4, 100) for k in range(4)]) == pytest.approx(0.5 + 0.4 + 0.04)
    # ten tiny messages cost more than one message of the same bytes
    many = net.phase_seconds([(0, 1, 10)] * 10)
    one = net.phase_seconds([(0, 1, 100)])
    assert many == pytest.approx(one + 9 * 0.01)
    assert network_preset("ethernet_10g").with_message_latency(1e-5).message_latency_s == 1e-5
    with pytest.raises(ValueError, match="message_latency_s=-1"):
        NetworkModel("bad", 1.0, 0.0, message_latency_s=-1)


def test_per_peer_messages_and_wire_overhead():
    net = NetworkModel("test", 1000.0, 0.0, message_latency_s=0.01, per_peer=True, wire_overhead=0.5)
    # four messages to one peer and one to another: two peers, 200 bytes x 1.5 on the sender's link
    assert net.phase_seconds([(0, 1, 40)] * 4 + [(0, 2, 40)]) == pytest.approx(200 * 1.5 / 1000 + 2 * 0.01)
    spec = "link(bandwidth_bytes_per_s=1000, latency_s=0, message_latency_s=0.01, per_peer=True, wire_overhead=0.5)"
    assert network_preset(spec) == NetworkModel(spec, 1000, 0, 0.01, 0.5, True)
    assert canonical_network(spec).endswith("wire_overhead=0.5, per_peer=True)")
    assert "wire_overhead" not in canonical_network("link(bandwidth_bytes_per_s=1000, latency_s=0)")  # keys unchanged
    with pytest.raises(ValueError, match="per_peer=1 is not allowed"):
        NetworkModel("bad", 1.0, 0.0, per_peer=1)
    with pytest.raises(ValueError, match="wire_overhead=-0.1"):
        NetworkModel("bad", 1.0, 0.0, wire_overhead=-0.1)


def test_node_messages_add_a_nodes_messages_out_and_in_but_not_its_bytes():
    ring = [(0, 1, 100), (1, 2, 100), (2, 0, 100)]  # each node: one message out, one in
    both = ring + [(1, 0, 300), (2, 1, 100), (0, 2, 100)]  # node 0 receives 100 + 300 bytes, sends 200
    per_direction = NetworkModel("d", 1000.0, 0.0, message_latency_s=0.01, per_peer=True)
    per_node = NetworkModel("n", 1000.0, 0.0, message_latency_s=0.01, per_peer=True, node_messages=True)
    assert per_direction.phase_seconds(ring) == pytest.approx(0.1 + 0.01)
    assert per_node.phase_seconds(ring) == pytest.approx(0.1 + 0.02)
    # bytes: the busier direction of the busiest node (node 0 in, 400); messages: two out + two in
    assert per_node.phase_seconds(both) == pytest.approx(0.4 + 0.04)
    assert per_direction.phase_seconds(both) == pytest.approx(0.4 + 0.02)
    spec = "link(bandwidth_bytes_per_s=1000, latency_s=0, message_latency_s=0.01, per_peer=True, node_messages=True)"
    assert network_preset(spec).node_messages and canonical_network(spec).endswith("per_peer=True, node_messages=True)")
    with pytest.raises(ValueError, match="node_messages=1 is not allowed"):
        NetworkModel("bad", 1.0, 0.0, node_messages=1)


def test_ledger_reports_any_phase_and_role_for_every_step():
    ledger = Ledger()
    ledger.record(0, "ring", 0, 1, "a", 120, 100)
    ledger.record(0, "ring", 1, 0, "a", 120, 100)
    ledger.record(2, "control", 4, 0, "bits", 21, 1)
    ledger.record(2, "control", 4, 4, "bits", 21, 1)  # to itself: not network traffic
    roles = {0: "peer", 1: "peer", 4: "server"}
    per = ledger.per_step(4, ("ring", "gossip"), roles)
    assert per["bytes"].tolist() == [240, 0, 21, 0]
    assert per["payload_bytes"].tolist() == [200, 0, 1, 0]
    assert per["framing_bytes"].tolist() == [40, 0, 20, 0]
    assert per["ring_messages"].tolist() == [2, 0, 0, 0] and per["gossip_bytes"].tolist() == [0] * 4
    assert per["control_payload"].tolist() == [0, 0, 1, 0]
    assert per["server_sent_bytes"].tolist() == [0, 0, 21, 0] and per["peer_sent_messages"].tolist() == [2, 0, 0, 0]
    with pytest.raises(ValueError, match="steps=2"):
        ledger.per_step(2)
    assert Ledger.from_arrays(ledger.to_arrays()).rows() == ledger.rows()


def test_cli_default_timeout_matches_the_transport():
    from thinwire import cli
    from thinwire.comm import DEFAULT_TIMEOUT_S
    assert cli.DEFAULT_TIMEOUT_S == DEFAULT_TIMEOUT_S


def test_a_failed_collective_names_the_ranks_that_do_not_answer():
    import torch.distributed as dist
    from thinwire.comm.stall import ProgressBoard
    store = dist.HashStore()
    boards = [ProgressBoard(store, r, 4, timeout_s=5) for r in range(4)]
    for board in boards[:3]:
        for what in ("exchange", "all_gather_object", "exchange"):
            board.enter(what)
    boards[3].enter("exchange")  # rank 3 stopped after its first collective
    store.set("thinwire/alive/1", "3")  # rank 1 timed out too and answered
    store.set("thinwire/alive/2", "3")
    error = boards[0].diagnose(RuntimeError("Timed out waiting 5000ms"), grace_s=0.3)
    assert str(error).startswith("rank(s) 3 stalled or died: rank 0 waited 0.0 s in collective 3 (exchange) and it "
                                 "failed before the timeout of 5 s (a peer's connection closed)")
    assert "rank 3 last entered collective 1 (exchange)" in str(error) and "Timed out" in str(error)
    boards[0].entered -= 5.0  # as if rank 0 had waited the whole timeout
    error = boards[0].diagnose(RuntimeError("Timed out waiting 5000ms"), grace_s=0.3)
    assert "rank 0 waited 5." in str(error) and "for longer than the collective timeout of 5 s" in str(error)
    assert error.live == [1, 2]
    store.set("thinwire/alive/3", "1")
    assert "every peer is alive" in str(boards[0].diagnose(RuntimeError("slow"), grace_s=0.3))


def test_a_rank_that_reported_waits_for_its_live_peers_to_report_before_it_exits():
    """torchrun stops the other ranks as soon as one exits: a rank that printed its error
    waits for the live peers to print theirs, and no longer than it is told."""
    import threading
    import time

    import torch.distributed as dist
    from thinwire.comm.stall import ProgressBoard
    store = dist.HashStore()
    boards = [ProgressBoard(store, r, 4, timeout_s=5) for r in range(4)]
    late = threading.Timer(0.4, boards[1].reported, args=([0],))
    late.start()
    start = time.monotonic()
    boards[0].reported([1], wait_s=5.0)
    waited = time.monotonic() - start
    late.join()
    assert 0.35 < waited < 3.0, waited
    start = time.monotonic()
    boards[2].reported([0, 1, 3], wait_s=0.3)  # rank 3 never reports: the wait is bounded
    assert 0.25 < time.monotonic() - start < 2.0


def test_an_unreachable_store_points_at_the_master_node():
    from thinwire.comm.stall import ProgressBoard

    class Gone:
        def set_timeout(self, _):
            raise ConnectionResetError("Connection reset by peer")

    error = ProgressBoard(Gone(), 1, 2, timeout_s=5).diagnose(RuntimeError("recv failed"), grace_s=0.1)
    assert "rendezvous store is unreachable" in str(error) and "where rank 0 runs" in str(error)
    assert "failed before the timeout" in str(error)
