"""Command line: ``python -m thinwire run|config|runs|scraps|readme|tidy|presets``, and what
exists: ``codecs|policies|algorithms|models|recipes`` (``listing.py``).

    python -m thinwire config --dump [--set steps=50 ...] > cfg.json   # a config --config reads
    python -m thinwire run --config cfg.json [--set steps=50 ...] [--backend inprocess|gloo|nccl]
    python -m thinwire run --config cfg.json --retime   # take a cached run's times again
    python -m thinwire run --recipe "slim_dp:Slim-DP (0.2, 0.1)" --set steps=50   # a paper's method
    torchrun --nproc-per-node 4 -m thinwire run --config cfg.json --backend gloo
    python -m thinwire runs [--wide] [--csv runs.csv] [--remove KEY ...]
    python -m thinwire runs diff KEY_A KEY_B   # configs' differences, summaries side by side
    python -m thinwire export KEY --csv DIR    # per-step metrics and the ledger as CSV
    python -m thinwire data fetch mnist [--to DIR]   # a dataset from its published source
    python -m thinwire scraps notebooks/quickstart.ipynb
    python -m thinwire readme          # README tables from reports/ (after make reproduce)
    python -m thinwire tidy reports/*.ipynb   # executed notebooks small enough to commit

``run`` prints its JSON summary on stdout and two lines on stderr: what ran and how it
ended, and whether it trained or reused a saved result, with the result's folder.

A user's mistake (a bad value, a missing file or dataset, a closed pipe) ends with one line
on stderr and exit status 2, never a traceback.
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


class UserError(Exception):
    """A mistake in what the user asked for: printed as one line, exit status 2."""


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _set_values(items: list[str], algorithm: str) -> dict:
    """``--set`` items as {field: value}; ``section.field`` must name ``algorithm``'s section."""
    from .algorithms import ALGORITHMS
    sets = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"--set expects key=value, got {item!r}")
        section, dot, field = key.partition(".")  # "sharded_ps.lr=0.01" or plain "lr=0.01"
        if dot:
            if section not in ALGORITHMS:
                raise UserError(f"--set {item!r}: {section!r} is not a section; sections are algorithms: "
                                f"{sorted(ALGORITHMS)}")
            if section != algorithm:
                raise UserError(f"--set {item!r}: this config's algorithm is {algorithm!r}, so its section is "
                                f"{algorithm!r}, not {section!r} (set algorithm={section} to use that one)")
            allowed = ALGORITHMS[algorithm].Section.__dataclass_fields__
            if field not in allowed:
                raise UserError(f"--set {item!r}: {algorithm} has no parameter {field!r}; its parameters: "
                                f"{sorted(allowed)}")
        name = field if dot else key
        value = _parse_value(raw)
        sets[name] = value
    return sets


def _recipe_config(args):
    """``--recipe paper:label``: the paper's recipe on the common fields ``--set`` gives (any
    of the recipe's own settings may be set too)."""
    from .experiment.config import COMMON_FIELDS
    from .papers import PAPERS, paper
    from .validation import did_you_mean
    name, sep, label = args.recipe.partition(":")
    if not sep or name not in PAPERS:
        raise UserError(f"--recipe {args.recipe!r} is not allowed: it must be paper:label, paper one of "
                        f"{list(PAPERS)}{did_you_mean([name], PAPERS) if sep else ''} (thinwire recipes lists them)")
    found = paper(name).recipes
    if label not in found:
        raise UserError(f"--recipe {args.recipe!r}: {name} has no recipe {label!r}{did_you_mean([label], found)}; "
                        f"its recipes: {list(found)}")
    if args.config:
        raise UserError("--recipe takes its fields from --set, not --config")
    recipe = found[label]
    sets = _set_values(args.set or [], recipe.algorithm)
    if sets.get("algorithm", recipe.algorithm) != recipe.algorithm:
        raise UserError(f"--recipe {args.recipe!r} is a {recipe.algorithm} recipe: algorithm={sets['algorithm']!r} "
                        "cannot be set with it")
    common = {k: v for k, v in sets.items() if k in COMMON_FIELDS and k != "algorithm"}
    try:
        return recipe.apply(common, **{k: v for k, v in sets.items() if k not in COMMON_FIELDS})
    except (ValueError, TypeError) as exc:
        raise UserError(f"invalid config: {exc}")


def _config(args):
    from .experiment import RunConfig
    if getattr(args, "recipe", None):
        return _recipe_config(args)
    values = {}
    if args.config:
        try:
            values = json.loads(Path(args.config).read_text())
        except OSError as exc:
            raise UserError(f"--config {args.config!r}: cannot read it ({exc.strerror})")
        except json.JSONDecodeError as exc:
            raise UserError(f"--config {args.config!r}: not valid JSON ({exc})")
        if not isinstance(values, dict):
            raise UserError(f"--config {args.config!r}: expected a JSON object of RunConfig fields")
    algorithm = values.get("algorithm", "plump_dp")
    for item in args.set or []:
        if item.startswith("algorithm="):
            algorithm = _parse_value(item.partition("=")[2])
    sets = _set_values(args.set or [], algorithm)
    try:
        config = RunConfig.from_dict(values)
        return config.replace(**sets) if sets else config
    except (ValueError, TypeError) as exc:
        raise UserError(f"invalid config: {exc}")


def cmd_config(args) -> int:
    text = json.dumps(_config(args).to_dict(), indent=1, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_run(args) -> int:
    if args.checkpoint_every < 0:
        raise UserError(f"--checkpoint-every {args.checkpoint_every} is not allowed: it must be >= 0 (0: every 60 s)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UserError(f"--timeout {args.timeout:g} is not allowed: the collective timeout must be a number of "
                         "seconds > 0")
    from .experiment import run
    config = _config(args)
    transport = None
    if args.backend != "inprocess":
        import torch
        import torch.distributed as dist
        from .comm import DistributedTransport, init_process_group
        if "RANK" not in os.environ:
            raise UserError(f"--backend {args.backend} must run under torchrun (RANK is not set)")
        init_process_group(args.backend, args.timeout)
        device = "cpu"
        if args.backend == "nccl":
            local = int(os.environ.get("LOCAL_RANK", 0))
            torch.cuda.set_device(local)
            device = f"cuda:{local}"
        transport = DistributedTransport(device, args.timeout, tensor_messages=device != "cpu")
    rank = 0 if transport is None else transport.rank
    try:
        result = run(config, transport, backend=args.backend, root=args.results, reuse=not args.no_reuse,
                     progress=args.progress and rank == 0 and sys.stderr.isatty(),
                     checkpoint_every=args.checkpoint_every, retime=args.retime, track=args.mlflow)
        if transport is not None:
            transport.barrier()  # no rank tears its connections down while a peer still uses them
    except Exception as exc:
        from .comm import StalledRankError
        if not isinstance(exc, StalledRankError):
            raise
        # A peer is stopped or gone: tearing the process group down could wait on it too.
        print(f"thinwire: {exc}", file=sys.stderr, flush=True)
        if transport is not None:
            transport.board.reported(exc.live)  # the launcher stops the others when the first rank exits
        os._exit(1)
    if transport is not None:
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"key": config.key(), "backend": args.backend, **result.summary}, indent=1))
        print(run_summary(result, retimed=args.retime), file=sys.stderr, flush=True)
    if transport is not None:
        # Every rank is done and rank 0 has written the result atomically. Leave without the
        # interpreter's teardown: destructors of gloo's background threads can still abort
        # there ("terminate called without an active exception", SIGABRT), seen intermittently
        # after a clean run. os._exit skips them; flush what Python would have flushed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def run_summary(result, retimed: bool = False) -> str:
    """Two lines for a person: what ran and how it ended, and whether it was trained now or
    its saved result reused, and where that is (stdout keeps the JSON summary)."""
    c, s = result.config, result.summary
    how = "retimed" if retimed else "reused" if result.reused else "trained"
    ran = (f"thinwire: {how} {c.algorithm}, {c.model}, push {c.push_codec}, {c.workers} workers, "
           f"{result.steps} steps ({result.backend})")
    accuracy = s.get("final_accuracy")
    ended = (f"accuracy {accuracy:.4f}, " if accuracy is not None else "") + \
        f"payload {_size(s['payload_per_step'])} per step, {s['wall_seconds']:.1f} s of training"
    where = f"result in {result.folder}" if result.folder is not None else "result not saved on this rank"
    return f"{ran}: {ended}\nthinwire: {where}{' (trained earlier; --no-reuse trains again)' if result.reused else ''}"


def cmd_list(args) -> int:
    from .listing import LISTS, render
    sys.stdout.write(render(LISTS[args.command]()))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("thinwire")
    except PackageNotFoundError:
        return "unknown (not installed)"


def cmd_scraps(args) -> int:
    from .scraps import NotExecutedError, read_scraps
    try:
        scraps = read_scraps(args.notebook)
    except OSError as exc:
        raise UserError(f"scraps {args.notebook!r}: cannot read it ({exc.strerror})")
    except NotExecutedError:
        raise UserError(f"scraps {args.notebook!r}: the notebook has not been executed, so it holds no scraps "
                        "(run it first: papermill, or make reproduce)")
    except UnicodeDecodeError as exc:
        raise UserError(f"scraps {args.notebook!r}: not a Jupyter notebook (not UTF-8 text: byte {exc.start})")
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as exc:
        raise UserError(f"scraps {args.notebook!r}: not a Jupyter notebook ({exc})")
    print(json.dumps(scraps, indent=1, sort_keys=True))
    return 0


def unlisted_notebooks(readme_text: str) -> list[str]:
    """The registered papers' notebooks that the README's table does not name (it is
    written from them between ``<!-- notebooks -->`` marks: a README without them lists none)."""
    from .papers import REGISTRY
    return [p.notebook for p in REGISTRY.values() if f"| `{p.notebook}` |" not in readme_text]


def cmd_readme(args) -> int:
    from .paths import reports_dir, source_checkout
    from .papers import REGISTRY
    from .report import block_notebooks, documents, index_notebooks, provenance_problems, update_readme
    root = source_checkout() or Path.cwd()
    files = [Path(args.readme)] if args.readme else documents(root)
    reports = Path(args.reports) if args.reports else reports_dir()
    papers = list(REGISTRY.values())  # the front README's notebook table (files[0])
    written = {readme: update_readme(readme, reports, None if args.readme else root, papers if readme == files[0] else ())
               for readme in files}
    if unlisted := unlisted_notebooks(written[files[0]][0]):
        print(f"the README's notebook table lists no row for {', '.join(unlisted)} (thinwire.papers.PAPERS)",
              file=sys.stderr)
        return 1
    problems = [p for _, found in written.values() for p in found]
    wrong = [p for p in problems if "profile" in p]
    if wrong:
        print(f"refused, executed at another profile: {'; '.join(wrong)}", file=sys.stderr)
        return 1
    if args.check:  # what has no executed notebook here (a fresh clone has no reports/) is not checked
        if problems:
            print(f"not checked, no executed notebook or scrap: {', '.join(problems)}")
        stale = [str(readme) for readme, (text, _) in written.items() if text != readme.read_text()]
        print(f"README tables differ from {reports}: {', '.join(stale)}" if stale else "README tables are up to date")
        untied = {p: None for readme in files
                  for path in [*block_notebooks(readme, reports, None if args.readme else root),
                               *index_notebooks(readme, papers if readme == files[0] else (), reports)]
                  for p in provenance_problems(path)}
        for problem in untied:
            print(f"provenance: {problem}", file=sys.stderr)
        return 0 if not stale and not untied else 1
    if problems:
        print(f"no executed notebook or table scrap for: {', '.join(problems)} (run make reproduce first)",
              file=sys.stderr)
        return 1
    for readme, (text, _) in written.items():
        readme.write_text(text)
    print(f"README tables written from {reports}: {', '.join(str(f.relative_to(root)) if f.is_relative_to(root) else str(f) for f in files)}")
    return 0


def cmd_tidy(args) -> int:
    from .tidy import tidy
    for name in args.notebooks:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"{name}: no such executed notebook")
        before, after = tidy(path)
        print(f"{name}: {before:,} -> {after:,} bytes")
    return 0


def cmd_presets(args) -> int:
    """The network presets as an aligned table: key (what ``network=`` takes), name, bandwidth,
    latency per exchange and per message."""
    from .comm import PRESETS
    rows = [("key", "name", "bandwidth", "latency", "per message")] + [
        (key, p.name, f"{_size(p.bandwidth_bytes_per_s)}/s", f"{p.latency_s * 1e6:g} us",
         f"{p.message_latency_s * 1e6:g} us") for key, p in PRESETS.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return 0


def _compact(table):
    """The runs table as a person reads it: method, key, steps, accuracy, loss, payload per
    step, wall time, date."""
    def shown(column, form):  # "" where a run has no such number (None, NaN)
        return table[column].map(lambda x: "" if x is None or x != x else form(x))
    return table.assign(
        key=table["key"].str[:8], accuracy=shown("final_accuracy", "{:.4f}".format),
        loss=shown("final_loss", "{:.4g}".format),
        **{"payload/step": shown("payload_per_step", _size), "wall s": shown("wall_seconds", "{:.1f}".format),
           "date": table["date"].map(lambda d: (d or "")[:16].replace("T", " "))},
    )[["method", "key", "steps", "accuracy", "loss", "payload/step", "wall s", "date"]]


def cmd_runs(args) -> int:
    from .experiment.catalog import diff_runs, remove_runs, runs_table
    root = Path(args.results) if args.results else None
    if args.action:
        if args.action[0] != "diff" or len(args.action) != 3:
            raise UserError(f"runs {' '.join(args.action)!r} is not allowed: the one action is `runs diff KEY_A KEY_B`")
        print(diff_runs(args.action[1], args.action[2], root).to_string(index=False))
        return 0
    if args.remove:
        for folder in remove_runs(args.remove, root):
            print(f"removed {folder}")
        return 0
    table = runs_table(root)
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"{len(table)} runs written to {args.csv}")
    elif table.empty:
        print("no finished runs")
    elif args.wide:
        print(table.to_string(index=False))
    else:
        print(_compact(table).to_string(index=False))
    return 0


def cmd_export(args) -> int:
    from .experiment.catalog import export_run
    for path in export_run(args.key, args.csv, Path(args.results) if args.results else None):
        print(f"wrote {path}")
    return 0


def cmd_data(args) -> int:
    from .datasets.fetch import fetch
    from .paths import data_dir
    try:
        fetch(args.name, Path(args.to) if args.to else data_dir(), mirror=args.source)
    except ConnectionError as exc:
        raise UserError(str(exc))
    if args.to and Path(args.to).resolve() != data_dir().resolve():
        print(f"thinwire: runs read it with THINWIRE_DATA={args.to}", file=sys.stderr)
    return 0


def _add_config_options(p) -> None:
    p.add_argument("--config", help="JSON file of RunConfig fields (thinwire config --dump writes one)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a field: steps=50, model='mlp(hidden=(64,))', push_codec='topk(ratio=0.01)', or "
                        "<algorithm>.<field>=VALUE for the config's own algorithm section")
    p.add_argument("--recipe", metavar="PAPER:LABEL",
                   help="a paper's method as its recipe sets it (thinwire recipes lists them); --set the rest")


def cmd_netcheck(args) -> int:
    from .netcheck import NetcheckUnavailable, netcheck, table, write
    try:
        rates = [float(r) for r in args.rates.split(",") if r.strip()]
    except ValueError:
        raise UserError(f"--rates {args.rates!r} is not allowed: comma-separated numbers of bytes/s") from None
    try:
        delays = [float(d) for d in args.delays.split(",") if d.strip()]
    except ValueError:
        delays = []
    if not delays or not all(0 <= d <= 1 for d in delays):
        raise UserError(f"--delays {args.delays!r} is not allowed: comma-separated one-way delays in seconds, "
                        "each in 0..1")
    if not rates or not 3 <= args.workers <= 64 or not 3 <= args.steps <= 10_000:
        raise UserError(f"--rates {args.rates!r}, --workers {args.workers}, --steps {args.steps}: at least one rate, "
                        "workers in 3..64, steps in 3..10000")
    try:
        if args.two_hosts:
            from .netcheck import two_host_check
            report = two_host_check(rates[0])
            print(json.dumps(report, indent=1))
            return 0 if report["same_ledger"] and report["same_accuracy"] else 1
        if not 1e4 <= args.calibrate <= 1e11:
            raise UserError(f"--calibrate {args.calibrate!r} is not allowed: bytes/s in 1e4..1e11")
        if args.repeats < 1:
            raise UserError(f"--repeats {args.repeats!r} is not allowed: an int >= 1")
        rows = netcheck(rates, args.workers, args.steps, delays, calibrate=args.calibrate, repeats=args.repeats)
    except NetcheckUnavailable as exc:
        print(f"thinwire netcheck: unavailable here: {exc}", file=sys.stderr)
        return 3
    write(rows, args.output)
    print(table(rows))
    return 0


def main(argv=None) -> int:
    try:
        return _main(argv)
    except UserError as exc:
        print(f"thinwire: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head, less, ...: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FileNotFoundError, ValueError) as exc:  # a missing dataset or file, a bad value found late
        print(f"thinwire: {exc}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="thinwire")
    parser.add_argument("--version", action="version", version=f"thinwire {_version()}")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="import a plug-in module that registers codecs, policies or networks (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one config (in-process, or one rank under torchrun)")
    _add_config_options(p)
    p.add_argument("--backend", default="inprocess", choices=["inprocess", "gloo", "nccl"])
    p.add_argument("--results", default=None, help="results folder (default results/)")
    p.add_argument("--no-reuse", action="store_true", help="run even if a finished result exists")
    p.add_argument("--retime", action="store_true",
                   help="take a cached run's times again (bytes and losses checked, only times replaced)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar (there is none when stderr is not a terminal)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help="torch.distributed: the longest a collective waits for a peer before every rank "
                        f"stops with an error naming the stalled rank (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--mlflow", nargs="?", const="1", default=None, metavar="URI",
                   help="log the run to MLflow: the local mlruns/ store, or the tracking URI given "
                        "(default: $THINWIRE_MLFLOW; needs pip install thinwire[mlflow])")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="save a checkpoint every STEPS steps (default: every 60 s); a rerun resumes from it")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("config", help="print (or --output) a config as JSON, which --config reads back")
    _add_config_options(p)
    p.add_argument("--dump", action="store_true", help="write the config (the default action)")
    p.add_argument("--output", default=None, help="write to this file instead of stdout")
    p.set_defaults(func=cmd_config)
    p = sub.add_parser("runs", help="list finished runs (key, config summary, date, provenance)")
    p.add_argument("--results", default=None, help="results folder (default results/)")
    p.add_argument("--csv", default=None, help="write the runs table to this CSV file")
    p.add_argument("--remove", nargs="+", metavar="KEY", help="delete these runs (key or key prefix)")
    p.add_argument("--wide", action="store_true", help="every column, not the compact table")
    p.add_argument("action", nargs="*", metavar="diff A B",
                   help="`diff KEY_A KEY_B`: the configs' differences, then the two summaries side by side")
    p.set_defaults(func=cmd_runs)
    p = sub.add_parser("export", help="write a run's per-step metrics and its ledger as CSV files")
    p.add_argument("key", help="the run's key (a prefix of at least 4 hex digits)")
    p.add_argument("--csv", required=True, metavar="DIR", help="folder to write metrics.csv and ledger.csv into")
    p.add_argument("--results", default=None, help="results folder (default results/)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("data", help="download a dataset from its published source, MD5-checked, resuming")
    p.add_argument("action", choices=["fetch"])
    p.add_argument("name", help="mnist, fashion_mnist or cifar10")
    p.add_argument("--to", default=None, metavar="DIR", help="data folder (default: where runs read it, data/ "
                   "or $THINWIRE_DATA)")
    p.add_argument("--from", dest="source", default=None, metavar="URL",
                   help="take the files from this base URL (a mirror) instead of the published sources")
    p.set_defaults(func=cmd_data)
    p = sub.add_parser("scraps", help="print the numbers an executed notebook recorded, as JSON")
    p.add_argument("notebook")
    p.set_defaults(func=cmd_scraps)
    p = sub.add_parser("readme", help="write the results tables of the README and the paper packages' READMEs from executed notebooks")
    p.add_argument("--reports", default=None, help="folder of executed notebooks (default reports/)")
    p.add_argument("--readme", default=None, help="README to update (default the repository's)")
    p.add_argument("--check", action="store_true", help="only report whether the tables are up to date")
    p.set_defaults(func=cmd_readme)
    p = sub.add_parser("tidy", help="strip widgets and palette-encode figures of executed notebooks, in place")
    p.add_argument("notebooks", nargs="+")
    p.set_defaults(func=cmd_tidy)
    p = sub.add_parser("netcheck", help="check the network model on an emulated cluster of shaped links (root)")
    p.add_argument("--rates", default="10e6,50e6", help="link bandwidths in bytes/s, comma-separated, to check the model on")
    p.add_argument("--calibrate", type=float, default=25e6, metavar="BYTES_PER_S",
                   help="the bandwidth the model's fixed costs are fitted at (netcheck/fit.py)")
    p.add_argument("--repeats", type=int, default=2, help="runs of each topology at each bandwidth, pooled")
    p.add_argument("--workers", type=int, default=3, help="workers (peers); the star adds a server")
    p.add_argument("--steps", type=int, default=30, help="steps per run (the first 2 are not compared)")
    p.add_argument("--delays", default="0", metavar="SECONDS",
                   help="one-way delays between nodes to check the model at, comma-separated (a delay > 0 needs iptables)")
    p.add_argument("--output", default="results/netcheck.json", help="where the rows go (JSON)")
    p.add_argument("--two-hosts", action="store_true",
                   help="instead: torchrun --nnodes 2 across two namespaces, checked against one process")
    p.set_defaults(func=cmd_netcheck)
    p = sub.add_parser("presets", help="list network presets")
    p.set_defaults(func=cmd_presets)
    for what, shown in (("codecs", "codecs"), ("policies", "policies"), ("algorithms", "algorithms and their --set fields"),
                        ("models", "model specs"), ("recipes", "the papers' recipes, for run --recipe")):
        p = sub.add_parser(what, help=f"list the {shown}, with arguments, defaults and a line each")
        p.set_defaults(func=cmd_list)
    args = parser.parse_args(argv)
    from .plugins import load_plugins
    load_plugins(args.imports)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
