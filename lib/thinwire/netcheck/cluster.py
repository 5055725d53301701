"""An emulated cluster on one Linux machine: network namespaces joined by veth pairs to one
bridge, each link shaped with ``tc``. The network model's picture made real (``comm/network.py``):
every node has one full-duplex link of a known bandwidth to a non-blocking switch.

- a namespace ``<prefix>s`` holds the switch, a bridge ``br0``;
- node k lives in namespace ``<prefix>n<k>`` with one interface ``eth0`` at 10.213.0.(k + 1)/24,
  the other end of its veth pair enslaved to the bridge;
- both directions are shaped at ``rate_bytes_per_s`` of Ethernet frames, with a bucket of 1 ms
  of traffic (at least two frames), by a hierarchical token bucket (``htb``) with one class
  per other node, which share the rate in turn: the uplink (the node's ``eth0``) by
  destination, as a host's default ``fq_codel`` sends its flows (this kernel lacks
  ``fq_codel``, ``fq`` and ``sfq``), the downlink (its port in the switch namespace) by
  source, as a switch with a queue per input serves them. Each class queues ``queue_s`` of
  traffic at most (1 s by default: shorter queues drop the star's incast and retransmission
  timeouts then dominate). One FIFO per direction (``tbf``) fed a node's peers unevenly and
  queued gloo's small "ready to receive" messages behind data;
  - the veths hand the qdiscs packets of at most 4 frames (``gso_max_segs``): with the
    kernel's 64 kB segmentation-offload packets ``htb`` let the first one through an idle
    class at once, and with one frame per packet the 2 cores could not keep 50 MB/s;
- with ``delay_s`` > 0, every packet a node receives is held ``delay_s`` after the shaped
  links, by a delay line in the node's namespace (``delay_line.py``: netfilter's NFQUEUE, asked
  for by an iptables rule): a one-way delay of ``delay_s`` between any two nodes, a round trip
  of twice that. This kernel has no ``netem``, and the delay line needs only iptables.

Everything is created inside namespaces this object makes, and traffic only flows between
them. ``close`` (and leaving the ``with`` block, an exception or a SIGTERM included) deletes
the namespaces, which removes their veths and qdiscs with them. Where namespaces cannot be
made (not root, no ``ip``, a container without the capability), or iptables or NFQUEUE is missing for a
delay, ``NetcheckUnavailable`` says so before anything is left behind. The delay lines are
processes of this one, stopped by ``close`` before the namespaces go.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

SUBNET = "10.213.0"


class NetcheckUnavailable(RuntimeError):
    """This machine cannot build the emulated cluster; the message says why."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def namespaces() -> list[str]:
    """The network namespaces on this machine (``ip netns list``)."""
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def leftovers(prefix: str = "tw") -> list[str]:
    """Namespaces whose name starts with ``prefix`` (what a cluster would leave behind)."""
    return [n for n in namespaces() if n.startswith(prefix)]


class Cluster:
    """``nodes`` namespaces on one shaped switch; see the module docstring."""

    def __init__(self, nodes: int, rate_bytes_per_s: float, delay_s: float = 0.0, prefix: str | None = None,
                 queue_s: float = 1.0):
        if not isinstance(nodes, int) or not 2 <= nodes <= 200:
            raise ValueError(f"nodes={nodes!r} is not allowed: it must be an int in 2..200")
        if not (isinstance(rate_bytes_per_s, (int, float)) and 1e4 <= rate_bytes_per_s <= 1e11):
            raise ValueError(f"rate_bytes_per_s={rate_bytes_per_s!r} is not allowed: a number in 1e4..1e11")
        if not (isinstance(delay_s, (int, float)) and 0 <= delay_s <= 1):
            raise ValueError(f"delay_s={delay_s!r} is not allowed: a number of seconds in 0..1")
        if not (isinstance(queue_s, (int, float)) and 1e-3 <= queue_s <= 10):
            raise ValueError(f"queue_s={queue_s!r} is not allowed: a number of seconds in 0.001..10")
        self.nodes, self.rate, self.delay, self.queue_s = nodes, float(rate_bytes_per_s), float(delay_s), float(queue_s)
        self.prefix = prefix or f"tw{os.getpid() % 100000}"
        self.made: list[str] = []
        self.lines: list[subprocess.Popen] = []
        self._old_term = None

    # -- names -----------------------------------------------------------------------------
    @property
    def switch(self) -> str:
        return f"{self.prefix}s"

    def node(self, k: int) -> str:
        return f"{self.prefix}n{k}"

    def address(self, k: int) -> str:
        return f"{SUBNET}.{k + 1}"

    # -- building --------------------------------------------------------------------------
    def _check(self) -> None:
        if shutil.which("ip") is None or shutil.which("tc") is None:
            raise NetcheckUnavailable("netcheck needs iproute2's `ip` and `tc` on PATH; they are not there")
        if os.geteuid() != 0:
            raise NetcheckUnavailable("netcheck builds network namespaces, which needs root; this process is not")
        probe = f"{self.prefix}probe"
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            raise NetcheckUnavailable(f"this machine does not permit network namespaces: {made.stderr.strip()}")
        try:
            link = _ip("-n", probe, "link", "add", "twp0", "type", "veth", "peer", "name", "twp1", check=False)
            if link.returncode != 0:
                raise NetcheckUnavailable(f"this machine does not permit veth pairs: {link.stderr.strip()}")
            if self.delay > 0:
                line = self._delay(probe)
                line.kill()
                line.communicate()
        finally:
            _ip("netns", "del", probe, check=False)

    def _tc(self, namespace: str, *args: str) -> None:
        done = subprocess.run(["ip", "netns", "exec", namespace, "tc", *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"tc {' '.join(args)} in {namespace} failed: {done.stderr.strip()}")

    def _delay(self, namespace: str) -> subprocess.Popen:
        """Hold every packet ``namespace`` receives for ``delay_s``: the iptables rule that
        queues them, and the delay line (started, and ``ready``) that lets them go."""
        if shutil.which("iptables") is None:
            raise NetcheckUnavailable("a delay needs iptables (Debian: apt-get install iptables), which is not on "
                                      "PATH; run with delay 0 (the veths' own latency)")
        rule = subprocess.run(["ip", "netns", "exec", namespace, "iptables", "-t", "raw", "-A", "PREROUTING",
                               "-j", "NFQUEUE", "--queue-num", "0"], capture_output=True, text=True)
        if rule.returncode != 0:
            raise NetcheckUnavailable(f"a delay needs iptables' NFQUEUE target, which failed here "
                                      f"({rule.stderr.strip()}); run with delay 0 (the veths' own latency)")
        line = subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-m", "thinwire.netcheck.delay_line",
                                 repr(self.delay), str(os.getpid())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        if line.stdout.readline().strip() != "ready":
            line.kill()
            raise NetcheckUnavailable(f"the delay line could not bind NFQUEUE 0: {line.communicate()[1].strip()[-500:]}")
        return line

    @property
    def burst(self) -> int:
        return max(2 * 1514, int(self.rate * 1e-3))

    def _shape_fair(self, k: int, namespace: str, device: str, match: str) -> None:
        """Node k's link in one direction: the rate shared in turn by one class per other node
        (``htb``), matched on the packets' ``dst`` (the uplink) or ``src`` (the downlink)."""
        bits, burst = int(self.rate * 8), str(self.burst)
        share = ["rate", f"{max(8, bits // self.nodes)}bit", "ceil", f"{bits}bit", "burst", burst, "cburst", burst,
                 "quantum", "3028"]  # two full frames a turn
        self._tc(namespace, "qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "1")
        self._tc(namespace, "class", "add", "dev", device, "parent", "1:", "classid", "1:2", "htb", "rate", f"{bits}bit",
                 "ceil", f"{bits}bit", "burst", burst, "cburst", burst)
        for j in (None, *(j for j in range(self.nodes) if j != k)):  # None: ARP and the rest
            minor = 1 if j is None else 10 + j
            self._tc(namespace, "class", "add", "dev", device, "parent", "1:2", "classid", f"1:{minor}", "htb", *share)
            self._tc(namespace, "qdisc", "add", "dev", device, "parent", f"1:{minor}", "handle", f"{minor + 100}:",
                     "bfifo", "limit", str(max(64 * 1024, int(self.rate * self.queue_s))))
            if j is not None:
                self._tc(namespace, "filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                         "match", "ip", match, f"{self.address(j)}/32", "flowid", f"1:{minor}")

    def open(self) -> Cluster:
        self._check()
        self._old_term = signal.signal(signal.SIGTERM, _raise_exit)
        try:
            _ip("netns", "add", self.switch)
            self.made.append(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for k in range(self.nodes):
                ns, here, port = self.node(k), f"{self.prefix}a{k}", f"{self.prefix}b{k}"
                _ip("netns", "add", ns)
                self.made.append(ns)
                _ip("-n", ns, "link", "add", here, "type", "veth", "peer", "name", port, "netns", self.switch)
                _ip("-n", ns, "link", "set", here, "name", "eth0")
                # one frame per packet: with segmentation offload the kernel hands the qdiscs 64 kB
                # packets, which htb lets through an idle class at once (a free burst of up to 64 kB)
                _ip("-n", ns, "link", "set", "eth0", "gso_max_segs", "4")
                _ip("-n", self.switch, "link", "set", port, "gso_max_segs", "4")
                _ip("-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", self.switch, "link", "set", port, "master", "br0")
                _ip("-n", self.switch, "link", "set", port, "up")
                self._shape_fair(k, ns, "eth0", "dst")
                self._shape_fair(k, self.switch, port, "src")
                if self.delay > 0:
                    self.lines.append(self._delay(ns))
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the delay lines; delete every namespace this cluster made (their veths, qdiscs
        and iptables rules go with them)."""
        for line in self.lines:
            line.kill()
            line.communicate()
        self.lines = []
        for ns in reversed(self.made):
            _ip("netns", "del", ns, check=False)
        self.made = []
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            self._old_term = None

    def __enter__(self) -> Cluster:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- running ---------------------------------------------------------------------------
    def popen(self, k: int, argv: list[str], env: dict, **kwargs) -> subprocess.Popen:
        """Start ``argv`` inside node k's namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.node(k), *argv], env=env, **kwargs)

    def run_all(self, commands: dict[int, list[str]], env: dict[int, dict], timeout_s: float, what: str) -> None:
        """Run node -> argv, each in its node's namespace (in its own session), and wait for
        all; ``RuntimeError`` with each failure's stderr tail. Nothing outlives the call."""
        procs = {k: self.popen(k, argv, env[k], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True) for k, argv in commands.items()}
        try:
            errors = []
            for k, p in procs.items():
                _, err = p.communicate(timeout=timeout_s)
                if p.returncode != 0:
                    errors.append(f"node {k} exited with {p.returncode}: {err[-3000:]}")
            if errors:
                raise RuntimeError(f"{what} failed:\n" + "\n".join(errors))
        finally:
            for p in procs.values():
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)
