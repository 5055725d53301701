"""The emulated cluster (namespaces, veths, shaped links): built, used, and removed, also on
an error or a SIGTERM; the transport's phase spans; a small netcheck run. Where this machine
cannot build namespaces, the cluster must say so (and the tests check that it does)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from thinwire.comm.transport import phase_spans
from thinwire.netcheck import (Cluster, NetcheckUnavailable, compare, corrected, fit_fixed_costs, leftovers, netcheck,
                               shaped, topology_configs, total)
from thinwire.comm import NetworkModel


def _available() -> str | None:
    """None when a cluster can be built here, else the reason it gives."""
    try:
        with Cluster(2, 1e7, prefix=f"twt{os.getpid() % 10000}"):
            return None
    except NetcheckUnavailable as exc:
        return str(exc)


REASON = _available()


def _delay_available() -> str | None:
    """None when a cluster with a delay can be built here, else the reason it gives."""
    if REASON is not None:
        return REASON
    try:
        with Cluster(2, 1e7, delay_s=0.001, prefix=f"twd{os.getpid() % 10000}"):
            return None
    except NetcheckUnavailable as exc:
        return str(exc)


DELAY_REASON = _delay_available()


def test_phase_spans_run_from_the_last_entry_to_the_last_exit():
    rank0 = [(0, "push", 1.0, 3.0), (0, "pull", 4.0, 5.0), (1, "push", 10.0, 11.0), (1, "push", 12.0, 13.0)]
    rank1 = [(0, "push", 2.0, 2.5), (0, "pull", 4.5, 6.0), (1, "push", 10.5, 11.2), (1, "push", 12.1, 12.6)]
    spans = phase_spans([rank0, rank1])
    assert spans == pytest.approx({(0, "push"): 1.0, (0, "pull"): 1.5, (1, "push"): 0.7 + 0.9})


def test_a_cluster_is_shaped_and_leaves_nothing_behind():
    if REASON is not None:
        assert any(w in REASON for w in ("root", "namespaces", "`ip`")), REASON
        return
    prefix = f"twt{os.getpid() % 10000}"
    with Cluster(3, 2e7, prefix=prefix) as cluster:
        assert set(leftovers(prefix)) == {cluster.switch, *(cluster.node(k) for k in range(3))}
        shown = subprocess.run(["ip", "netns", "exec", cluster.node(1), "tc", "qdisc", "show", "dev", "eth0"],
                               capture_output=True, text=True).stdout
        assert "htb" in shown
        classes = subprocess.run(["ip", "netns", "exec", cluster.node(1), "tc", "class", "show", "dev", "eth0"],
                                 capture_output=True, text=True).stdout
        assert "ceil 160Mbit" in classes and classes.count("class htb") == 4  # the link, the rest, nodes 0 and 2
        # node 2 answers a connection to a closed port with a reset: refused (errno 111), not a timeout
        ping = cluster.popen(0, [sys.executable, "-c", "import socket; s = socket.socket(); s.settimeout(5); "
                                 f"print(s.connect_ex(('{cluster.address(2)}', 9)))"],
                             dict(os.environ), stdout=subprocess.PIPE, text=True)
        assert ping.communicate(timeout=30)[0].strip() == "111"
    assert leftovers(prefix) == []
    with pytest.raises(ZeroDivisionError):
        with Cluster(2, 1e7, prefix=prefix):
            1 / 0
    assert leftovers(prefix) == []


def test_a_sigterm_removes_the_cluster():
    if REASON is not None:
        return  # checked above: the cluster said why it cannot be built
    prefix = f"twk{os.getpid() % 10000}"
    holder = subprocess.Popen([sys.executable, "-c", "import time; from thinwire.netcheck import Cluster\n"
                               f"with Cluster(2, 1e7, prefix='{prefix}'):\n    print('up', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "up"
    assert leftovers(prefix)
    holder.send_signal(signal.SIGTERM)
    holder.wait(timeout=30)
    deadline = time.monotonic() + 10
    while leftovers(prefix) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(prefix) == []


def _round_trips(cluster, n: int = 5) -> list[float]:
    """Seconds of n one-byte round trips from node 0 to node 1 over TCP."""
    echo = cluster.popen(1, [sys.executable, "-c", "import socket; s = socket.create_server(('0.0.0.0', 7007)); "
                             "print('up', flush=True); c = s.accept()[0]\nwhile (b := c.recv(1)): c.sendall(b)"],
                         dict(os.environ), stdout=subprocess.PIPE, text=True)
    assert echo.stdout.readline().strip() == "up"
    probe = cluster.popen(0, [sys.executable, "-c", "import socket, time; c = socket.create_connection(('"
                              f"{cluster.address(1)}', 7007)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n"
                              f"for _ in range({n}):\n t = time.perf_counter(); c.sendall(b'x'); c.recv(1); "
                              "print(time.perf_counter() - t)"], dict(os.environ), stdout=subprocess.PIPE, text=True)
    out = probe.communicate(timeout=60)[0]
    echo.wait(timeout=30)
    return [float(x) for x in out.split()]


def test_a_delay_holds_every_packet_one_way_and_leaves_nothing_behind():
    if DELAY_REASON is not None:
        assert any(w in DELAY_REASON for w in ("root", "namespaces", "`ip`", "iptables", "NFQUEUE")), DELAY_REASON
        return
    prefix = f"twe{os.getpid() % 10000}"
    with Cluster(2, 5e7, prefix=prefix) as cluster:
        plain = _round_trips(cluster)
    with Cluster(2, 5e7, delay_s=0.004, prefix=prefix) as cluster:
        delayed = _round_trips(cluster)
        lines = [line.pid for line in cluster.lines]
        assert len(lines) == 2
    # a round trip crosses two nodes' delay lines: 8 ms, where the veths alone take well under 1
    assert min(plain) < 1e-3 and 8e-3 <= min(delayed) < 12e-3, (plain, delayed)
    assert leftovers(prefix) == []
    assert all(not os.path.exists(f"/proc/{pid}") for pid in lines)


def test_the_delay_line_reads_packet_ids_from_a_netlink_datagram():
    from thinwire.netcheck.delay_line import PACKET, SUBSYS_QUEUE, _attribute, packet_ids
    import struct

    def packet(pid: int) -> bytes:
        body = struct.pack("!BBH", 2, 0, 0) + _attribute(7, b"abcd") + _attribute(1, struct.pack("!IHB", pid, 0x800, 1))
        return struct.pack("=IHHII", 16 + len(body), (SUBSYS_QUEUE << 8) | PACKET, 0, 0, 0) + body

    assert packet_ids(packet(7) + packet(123456)) == [7, 123456]
    error = struct.pack("=IHHII", 20, 2, 0, 0, 0) + struct.pack("=i", 0)  # an acknowledgement: no packet
    assert packet_ids(error + packet(9)) == [9]
    assert packet_ids(b"") == [] and packet_ids(b"\0" * 16) == []


def test_bad_cluster_settings_name_the_parameter():
    with pytest.raises(ValueError, match="nodes=1"):
        Cluster(1, 1e7)
    with pytest.raises(ValueError, match="rate_bytes_per_s"):
        Cluster(2, 0)
    with pytest.raises(ValueError, match="delay_s"):
        Cluster(2, 1e7, delay_s=-1)


def test_netcheck_measures_every_topology_and_prices_the_same_ledger():
    if REASON is not None:
        with pytest.raises(NetcheckUnavailable):
            netcheck([1e7], steps=4)
        return
    delays = (0.0, 0.003) if DELAY_REASON is None else (0.0,)
    report = netcheck([2e7], workers=3, steps=5, calibrate=5e7, repeats=1, delays=delays)  # pooling: test_total_...
    rows = report["rows"]
    assert [(r["topology"], r["delay_s"]) for r in rows] == \
        [(t, d) for d in delays for t in ("star", "ring_allreduce", "eventgrad_ring")]
    assert all(r["measured_s"] > 0 and r["predicted_s"] > 0 for r in rows)
    assert report["latency_s"] >= 0 and report["message_latency_s"] >= 0
    assert set(report["calibration"]) == {"star", "ring_allreduce", "eventgrad_ring"} and report["repeats"] == 1
    assert report["calibration_repeats"] == 2
    star = rows[0]
    pushes = [p for p in star["phases"] if p["phase"] == "push"][0]
    # the plain model's push: all workers' gradients (and their few bytes of framing) into the server's link
    assert star["plain_predicted_s"] == pytest.approx(2 * pushes["payload_bytes"] / 2e7, rel=0.02)
    # the corrected one adds the headers and the fitted costs: one per phase, one per peer (3 at the server)
    fixed = report["latency_s"] + 3 * report["message_latency_s"]
    assert pushes["predicted_s"] == pytest.approx(pushes["payload_bytes"] * (1 + 66 / 1448) / 2e7 + 3 * fixed, rel=0.02)
    assert f"tw{os.getpid() % 100000}s" not in leftovers("tw")
    if len(delays) == 2:
        for plain, delayed in zip(rows[:3], rows[3:]):
            phases = delayed["exchanges"]
            # each phase waits at least for a notification and its data: two one-way delays
            assert delayed["measured_s"] - plain["measured_s"] > 2 * 0.003 * phases * 0.8, (plain, delayed)
            # the model counts 2 x ranks of them a phase (fit.exchange_delays)
            gap = delayed["predicted_s"] - plain["predicted_s"]
            assert gap == pytest.approx(2 * delayed["ranks"] * 0.003 * phases, rel=1e-6)


def test_topologies_put_each_agent_on_its_own_rank():
    configs = topology_configs(3, 6, "mlp(hidden=(8,))")
    assert {k: ranks for k, (_, ranks) in configs.items()} == {"star": 4, "ring_allreduce": 3, "eventgrad_ring": 3}
    assert configs["eventgrad_ring"][0].push_policy.startswith("always")


def test_compare_uses_the_model_on_each_phase():
    class Fake:
        metrics = {"push_span_seconds": [None, 1.0, 2.0]}

        class ledger:
            @staticmethod
            def by_phase_step():
                return {(1, "push"): [(0, 2, 100)], (2, "push"): [(1, 2, 100), (0, 2, 100)]}

            @staticmethod
            def rows():
                return [(1, "push", 0, 2, "w", 100, 90), (2, "push", 0, 2, "w", 100, 90), (2, "push", 1, 2, "w", 100, 90)]

    rows = compare(Fake(), NetworkModel("x", 100.0, 0.5), skip=1)
    assert rows == [{"phase": "push", "steps": 2, "payload_bytes": 270, "measured_s": 3.0,
                     "predicted_s": pytest.approx(1.5 + 2.5), "error_pct": pytest.approx(100 * 1.0 / 3.0),
                     "bytes_s": pytest.approx(1.0 + 2.0), "messages": 3}]


def test_total_takes_the_median_of_each_steps_summed_spans():
    class Fake:
        # two phases; step 3's pull has no span (not timed); step 1 is skipped
        metrics = {"push_span_seconds": [None, 9.0, 1.0, 1.0, 5.0, 1.0], "pull_span_seconds": [None, 9.0, 1.0, None, 1.0, 4.0]}

        class ledger:
            @staticmethod
            def by_phase_step():
                return {(s, p): [(0, 1, 100)] for s in range(1, 6) for p in ("push", "pull")}

            @staticmethod
            def rows():
                return [(s, p, 0, 1, "w", 100, 90) for s in range(1, 6) for p in ("push", "pull")]

    network = NetworkModel("x", 100.0, 0.5, message_latency_s=0.25, per_peer=True, node_messages=True)
    row = total(Fake(), network, skip=2)
    # steps 2, 4, 5 summed: 2, 6, 5 -> median 5, for four steps; per-phase medians would give 4 x (1 + 1)
    assert row["step_count"] == 4 and row["timed"] == 3 and row["measured_s"] == pytest.approx(20.0)
    assert row["steps"] == 8 and row["messages"] == 8  # a message out at node 0 and one in at node 1: one each
    assert row["predicted_s"] == pytest.approx(8 * (1.0 + 0.5 + 0.25))

    class Slower(Fake):
        metrics = {"push_span_seconds": [None, 9.0, 3.0, 3.0, 3.0, 3.0], "pull_span_seconds": [None, 9.0] + [3.0] * 4}

    # two runs of one config pool their steps: 2, 6, 5 and 6, 6, 6, 6 -> 6
    pooled = total([Fake(), Slower()], network, skip=2)
    assert pooled["timed"] == 7 and pooled["measured_s"] == pytest.approx(24.0)
    assert pooled["predicted_s"] == pytest.approx(row["predicted_s"])
    assert [p["phase"] for p in row["phases"]] == ["pull", "push"]


def test_the_fit_takes_the_median_cost_per_message_and_keeps_it_nonnegative():
    def row(steps, messages, bytes_s, per_message):
        return {"steps": steps, "messages": messages, "bytes_s": bytes_s, "measured_s": bytes_s + per_message * messages}
    rows = [row(10, 30, 0.5, 1e-3), row(40, 80, 0.1, 1.2e-3), row(10, 40, 0.4, 9e-3)]  # the last: a slow run
    assert fit_fixed_costs(rows) == pytest.approx((0.0, 1.2e-3))
    assert fit_fixed_costs([row(10, 30, 0.5, -1e-3)]) == (0.0, 0.0)  # the bytes alone took longer
    assert fit_fixed_costs([row(0, 0, 0.0, 0.0), row(5, 10, 0.1, 2e-3)]) == pytest.approx((0.0, 2e-3))
    with pytest.raises(ValueError, match="at least one row"):
        fit_fixed_costs([])
    model = corrected(shaped(1e7), latency_s=1e-3, message_latency_s=2e-4)
    assert model.latency_s == pytest.approx(1e-3) and model.per_peer and model.node_messages
    assert model.wire_overhead == pytest.approx(66 / 1448)


def test_torchrun_on_two_hosts_matches_one_process():
    if REASON is not None:
        return  # checked above: the cluster said why it cannot be built
    from thinwire.netcheck import two_host_check
    report = two_host_check(5e7, nproc_per_node=2)
    assert report["ranks"] == 4 and report["messages"] == 4 * 2 * 3 * 20  # 4 workers, 2 (K - 1) hops, 20 steps
    assert report["same_ledger"] and report["same_accuracy"]
    assert report["max_loss_gap"] < 1e-4


def test_the_validated_range_ends_below_the_first_bandwidth_any_topology_misses():
    from thinwire.netcheck import validated_max
    row = lambda rate, error, name="star", delay=0.0: {"topology": name, "rate_bytes_per_s": rate, "delay_s": delay,
                                                       "error_pct": error}
    report = {"rows": [row(10e6, -5.0), row(10e6, 12.0, "ring_allreduce", 0.005), row(50e6, -19.0),
                       row(50e6, 3.0, "eventgrad_ring"), row(200e6, 2.0), row(200e6, -31.0, "ring_allreduce"),
                       row(800e6, 1.0)]}
    assert validated_max(report) == 50e6      # 200 MB/s: the ring misses by 31%, so 800 MB/s does not count either
    assert validated_max(report, tolerance_pct=10.0) is None  # the lowest bandwidth misses by 12%
    assert validated_max({"rows": [row(10e6, 0.0), row(50e6, 0.0)]}) == 50e6
