"""Which OpenMP wait policy keeps the codecs near their fair share of a contended machine:
``load_bench.run_continuous`` (every codec alone, then with two matmul loads left running)
in fresh processes, under four settings, each repeated, interleaved so that a slow spell
of the machine falls on every setting:

- ``default``: ``OMP_WAIT_POLICY`` unset, torch's libgomp spins 300,000 times after every
  parallel region before its threads sleep;
- ``passive``: ``OMP_WAIT_POLICY=PASSIVE`` for the whole process (what ``make bench`` uses);
- ``torch_only``: PASSIVE while torch is imported (its libgomp reads the policy then), unset
  again before numba starts its threads;
- ``numba_only``: unset while torch is imported, PASSIVE when numba starts its threads (which
  loads the system's libgomp beside torch's).

numba's kernels run on torch's libgomp (``load_bench``'s docstring says why), so
``torch_only`` should match ``passive`` and ``numba_only`` should match ``default``.

``python benchmarks/wait_policy.py [repeats]`` writes ``benchmarks/wait_policy.json``
(kept in git, with the date, commit and CPU it ran on); ``run.py`` renders its summary into
the README. About a minute per run on the 2-core Xeon.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

SETTINGS = ("default", "passive", "torch_only", "numba_only")
RESULTS = Path(__file__).with_name("wait_policy.json")


def child(setting: str, n: int, repeats: int, rounds: int) -> None:
    """Runs in the fresh process: sets the policy around torch's import and numba's thread
    start as ``setting`` says, then prints ``run_continuous``'s rows as one JSON line."""
    if setting in ("passive", "torch_only"):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import torch  # noqa: F401  (torch's libgomp reads the policy here)
    if setting == "torch_only":
        del os.environ["OMP_WAIT_POLICY"]
    if setting == "numba_only":
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    from numba.np.ufunc import parallel
    parallel._launch_threads()  # numba's threading layer (and the system's libgomp) starts here
    if setting == "numba_only":
        del os.environ["OMP_WAIT_POLICY"]
    import load_bench
    print(json.dumps(load_bench.run_continuous(n, repeats, rounds)))


def measure(setting: str, n: int, repeats: int, rounds: int = 1) -> list[dict]:
    """``load_bench.run_continuous`` (``rounds`` rounds) in a fresh process under ``setting``
    (``make bench`` measures torch's default this way, beside its own PASSIVE run)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, __file__, "--child", setting, str(n), str(repeats), str(rounds)], env=env,
                          capture_output=True, text=True, cwd=Path(__file__).parent)
    if done.returncode != 0:
        raise RuntimeError(f"wait_policy {setting} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(runs: dict[str, list[list[dict]]]) -> dict[str, dict]:
    """Per setting: codecs above the target in each run, and the largest slowdown seen."""
    return {setting: {"runs": len(rows), "above_target": [sum(not r["met"] for r in run) for run in rows],
                      "largest_slowdown": max(r["slowdown"] for run in rows for r in run)}
            for setting, rows in runs.items()}


def commit() -> str:
    """The checked-out commit, short, with "+dirty" where tracked code differs from it
    (``provenance``'s rule; the benchmarks' kept results name it)."""
    from thinwire.experiment.timing import provenance
    full = provenance()["git_commit"]
    return "unknown" if full is None else full[:7] + full[40:]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
        return 0
    repeats = int(argv[0]) if argv else 3
    import load_bench
    runs: dict[str, list[list[dict]]] = {s: [] for s in SETTINGS}
    for _ in range(repeats):
        for setting in SETTINGS:
            runs[setting].append(measure(setting, load_bench.N, 7))
            print(setting, sum(not r["met"] for r in runs[setting][-1]), "codecs above the target", flush=True)
    from thinwire.experiment.timing import provenance  # imports torch: not in a child, which sets the policy first
    where = provenance()
    doc = {"date": datetime.date.today().isoformat(), "commit": commit(),
           "cpu": where["host_cpu"], "cores": where["cpu_count"],
           "target": load_bench.TARGET, "summary": summary(runs), "runs": runs}
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
