"""Command line: ``python -m thinwire run|scraps|presets``.

    python -m thinwire run --config cfg.json [--set steps=50 ...] [--backend inprocess|gloo|nccl]
    torchrun --nproc-per-node 4 -m thinwire run --config cfg.json --backend gloo
    python -m thinwire scraps notebooks/quickstart.ipynb
    python -m thinwire readme          # README tables from reports/ (after make reproduce)
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import sys
from pathlib import Path


DEFAULT_TIMEOUT_S = 300.0  # comm.distributed's default, here without importing torch


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _config(args):
    from .experiment import RunConfig
    values = {}
    if args.config:
        try:
            values = json.loads(Path(args.config).read_text())
        except OSError as exc:
            raise SystemExit(f"--config {args.config!r}: cannot read it ({exc.strerror})")
        except json.JSONDecodeError as exc:
            raise SystemExit(f"--config {args.config!r}: not valid JSON ({exc})")
        if not isinstance(values, dict):
            raise SystemExit(f"--config {args.config!r}: expected a JSON object of RunConfig fields")
    sets = {}
    for item in args.set or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        section, dot, field = key.partition(".")  # "sharded_ps.lr=0.01" or plain "lr=0.01"
        sets[field if dot else key] = _parse_value(raw)
    try:
        config = RunConfig.from_dict(values)
        return config.replace(**sets) if sets else config
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"invalid config: {exc}")


def cmd_run(args) -> int:
    if args.checkpoint_every < 0:
        raise SystemExit(f"--checkpoint-every {args.checkpoint_every} is not allowed: it must be >= 0 (0: every 60 s)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise SystemExit(f"--timeout {args.timeout:g} is not allowed: the collective timeout must be a number of "
                         "seconds > 0")
    from .experiment import run
    config = _config(args)
    transport = None
    if args.backend != "inprocess":
        import torch
        import torch.distributed as dist
        from .comm import DistributedTransport, init_process_group
        if "RANK" not in os.environ:
            raise SystemExit(f"--backend {args.backend} must run under torchrun (RANK is not set)")
        init_process_group(args.backend, args.timeout)
        device = "cpu"
        if args.backend == "nccl":
            local = int(os.environ.get("LOCAL_RANK", 0))
            torch.cuda.set_device(local)
            device = f"cuda:{local}"
        transport = DistributedTransport(device, args.timeout)
    rank = 0 if transport is None else transport.rank
    try:
        result = run(config, transport, backend=args.backend, root=args.results, reuse=not args.no_reuse,
                     progress=False, checkpoint_every=args.checkpoint_every)
        if transport is not None:
            transport.barrier()  # no rank tears its connections down while a peer still uses them
    except Exception as exc:
        from .comm import StalledRankError
        if not isinstance(exc, StalledRankError):
            raise
        # A peer is stopped or gone: tearing the process group down could wait on it too.
        print(f"thinwire: {exc}", file=sys.stderr, flush=True)
        os._exit(1)
    if transport is not None:
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"key": config.key(), "backend": args.backend, **result.summary}, indent=1))
    if transport is not None:
        # Every rank is done and rank 0 has written the result atomically. Leave without the
        # interpreter's teardown: destructors of gloo's background threads can still abort
        # there ("terminate called without an active exception", SIGABRT), seen intermittently
        # after a clean run. os._exit skips them; flush what Python would have flushed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def cmd_scraps(args) -> int:
    from .scraps import read_scraps
    print(json.dumps(read_scraps(args.notebook), indent=1, sort_keys=True))
    return 0


def cmd_readme(args) -> int:
    from .paths import REPO_ROOT, reports_dir
    from .report import update_readme
    readme = Path(args.readme) if args.readme else REPO_ROOT / "README.md"
    text, missing = update_readme(readme, Path(args.reports) if args.reports else reports_dir())
    if missing:
        print(f"no executed notebook or table scrap for: {', '.join(missing)} (run make reproduce first)",
              file=sys.stderr)
        return 1
    if args.check:
        same = text == readme.read_text()
        print("README tables are up to date" if same else "README tables differ from reports/")
        return 0 if same else 1
    readme.write_text(text)
    print(f"README tables written from {args.reports or reports_dir()}")
    return 0


def cmd_presets(args) -> int:
    from .comm import PRESETS
    for key, p in PRESETS.items():
        print(f"{key:16s} {p.name:28s} {p.bandwidth_bytes_per_s:.4g} B/s  latency {p.latency_s:g} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="thinwire")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one config (in-process, or one rank under torchrun)")
    p.add_argument("--config", help="JSON file of RunConfig fields")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field")
    p.add_argument("--backend", default="inprocess", choices=["inprocess", "gloo", "nccl"])
    p.add_argument("--results", default=None, help="results folder (default results/)")
    p.add_argument("--no-reuse", action="store_true", help="run even if a finished result exists")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="torch.distributed: the longest a collective waits for a peer before every rank "
                        f"stops with an error naming the stalled rank (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="save a checkpoint every STEPS steps (default: every 60 s); a rerun resumes from it")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("scraps", help="print the numbers an executed notebook recorded, as JSON")
    p.add_argument("notebook")
    p.set_defaults(func=cmd_scraps)
    p = sub.add_parser("readme", help="write the README's results tables from executed notebooks (reports/)")
    p.add_argument("--reports", default=None, help="folder of executed notebooks (default reports/)")
    p.add_argument("--readme", default=None, help="README to update (default the repository's)")
    p.add_argument("--check", action="store_true", help="only report whether the tables are up to date")
    p.set_defaults(func=cmd_readme)
    p = sub.add_parser("presets", help="list network presets")
    p.set_defaults(func=cmd_presets)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
