"""``refc fuzz``: a fuzzing campaign against the compiler (DESIGN §8).

Generates random valid graphs (and a share of graphs that break one
invariant), checks each with the oracle chain under several schedules, ``O0``
and the pipeline, shrinks every new failure, and writes ``DIR/summary.json``,
``DIR/junit.xml`` and ``DIR/cases/<signature>.json`` (one shrunk corpus case
per distinct failure signature), and ``DIR/inconclusive/<k>.json``: the first
cases whose programs the symbolic stage neither proved nor refuted (not
findings; counted in the summary and listed in the final lines). Exit 0 when nothing failed, 1 when
something did, 2 for bad usage, 3 when nothing failed but the campaign is
inconclusive: chunks were lost and no valid case was checked (a scheduler
or pass that hangs on every graph), or a worker died.

``--max-cases`` bounds the campaign by count (then, without ``--budget``,
nothing depends on time: one worker and one seed give one summary, timings
aside); ``--budget`` by seconds (default 60 without ``--max-cases``). A
campaign ends within budget + ``--shrink-grace`` + 5 s (``HARD_GRACE``):
a chunk stops the case it is checking a second before that
(``ChunkState.end``), and reports it as a lost chunk saying where the case
was (in which user's scheduler or pass, at which line).

Nothing found is lost: the outputs are rewritten after every chunk, each file
atomically, so each finding is on disk as soon as its chunk ends. SIGINT or
SIGTERM ends the chunks running (each within ``WIND_UP`` seconds: what it
checked counts, and a failure it was shrinking is stored as shrunk so far),
terminates the workers and writes a complete summary marked
``interrupted`` (a second signal, as of a double Ctrl-C, does not stop
that); the exit code is then 1 if anything was found, else 130 (SIGINT) or
143 (SIGTERM). ``--out`` is checked before any work, and an
earlier campaign's outputs in it are moved into ``DIR/earlier-<UTC time>/``
(``--clean``: removed), so that one directory never mixes two runs.

``--graph G`` fuzzes one given valid graph instead of generated ones (its
schedules, pipelines and, half of the time, fresh seeded input values); an
invalid or malformed G is exit 2 before any work.

``--cluster ADDRESS|local:N`` runs the chunks on a Dask cluster
(``fuzz.campaign.cluster``); a count-bounded campaign gives the same summary
there as locally, timings aside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import argparse
import contextlib
import dataclasses
import os
import secrets
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from refcompiler import limits
from refcompiler.errors import UsageError
from refcompiler.targets import BUILTIN
from refc.cli import fuzz_target
from refc.cli.common import file_path, locked_out, out_dir, plural, positive_seconds, seconds, whole_number, worker_count

if TYPE_CHECKING:
    from fuzz.campaign import CampaignConfig, Summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="run a fuzzing campaign; write a summary, JUnit XML and shrunk cases")
    p.add_argument("--budget", type=positive_seconds, default=None, metavar="SECONDS",
                   help="stop after this many seconds (default 60, or none with --max-cases)")
    p.add_argument("--max-cases", type=whole_number(1), default=None, metavar="N", help="hand out at most N generated cases; summary.json counts those checked, which can be fewer (repeated draws are skipped, and a chunk of 50 that finds a new failure ends once it is shrunk)")
    p.add_argument("--seed", type=_seed, default=0, metavar="N|random",
                   help="campaign seed (default 0, so that a run repeats); `random` picks a fresh one and prints it")
    p.add_argument("--workers", type=whole_number(1), default=None, metavar="N",
                   help="worker processes (default: all cores; at most the cores available); 1 runs in this process")
    p.add_argument("--force-workers", action="store_true", help="allow --workers above the cores available")
    # dest differs from --mutant of other commands: the oracle installs the
    # mutant around the compiler only, never around the reference
    p.add_argument("--mutant", dest="fuzz_mutant", metavar="NAME", default=None,
                   help="fuzz a deliberately wrong compiler (see `refc mutants`)")
    p.add_argument("--scheduler", metavar="SPEC", default=None,
                   help="the scheduler under test: topo, memory, random, or module:attribute "
                        "(default: every built-in one)")
    p.add_argument("--pipeline", metavar="SPEC", default="O2",
                   help="the pipeline under test, checked beside O0: O2, pass names, or module:attribute (default O2)")
    p.add_argument("--symbolic", choices=("auto", "on", "off"), default="auto",
                   help="symbolic translation validation of every distinct compiled program: "
                        "auto (default) validates graphs of at most 40 nodes and 1,024 storage elements")
    p.add_argument("--case-seconds", type=positive_seconds, default=None, metavar="SECONDS",
                   help="a case that takes longer is reported as a timeout finding (default 60; for generated graphs "
                        "under a --budget below 180 s, a third of it, at least 20 s: a hang is found with time left "
                        "to shrink and replay it)")
    p.add_argument("--graph", metavar="G", type=file_path, default=None,
                   help="fuzz one given graph (refc-graph/1 JSON; an ONNX model: `refc import` it first) instead of "
                        "generated ones: every case is G, with fresh seeded input values half of the time, under "
                        "the schedulers' orders and the pipeline; it must be valid (`refc check G`)")
    # (default None: given or not, so that --graph refuses either whatever its value; the config's defaults apply)
    p.add_argument("--max-nodes", type=whole_number(1), default=None, metavar="N", help="largest generated graph (default 10, at most REFC_MAX_NODES; not used with --graph)")
    # (fuzz.strategies.builder.MAX_DIM and fuzz.campaign.config.MAX_DIM_LIMIT: not imported to build the parser)
    p.add_argument("--max-dim", type=whole_number(2), default=None, metavar="N",
                   help="largest size drawn for an axis of a generated tensor, rank at most 3 (default 4, at most 64; "
                        "a concat's result is larger): larger finds what only large buffers show; not used with --graph")
    p.add_argument("--out", metavar="DIR", default="fuzz-out", help="output directory (default fuzz-out/)")
    p.add_argument("--clean", action="store_true", help="remove an earlier campaign's outputs from --out (its summary, junit.xml, cases, inconclusive cases, bugs and report.html; default: move them to DIR/earlier-<time>/; earlier-* folders are kept)")
    p.add_argument("--shrink-grace", type=seconds, default=5.0, metavar="SECONDS",
                   help="with --budget, how long past it a new failure may still be shrunk (default 5)")
    p.add_argument("--target", metavar="NAME", default=None,
                   help=f"fuzz an external compiler instead of refc's: {', '.join(BUILTIN)}, or module:attribute; "
                        "each finding also gets a bug folder OUT/bugs/<signature>/")
    p.add_argument("--cluster", metavar="ADDRESS|local:N", default=None,
                   help="run the chunks on the Dask cluster whose scheduler is at ADDRESS, or on a local one of N "
                        "worker processes started for the run (needs the dask extra: pip install -e '.[dask]')")
    p.set_defaults(func=run)


_SEED_LIMIT = 2**32


def _seed(text: str) -> int:
    """An argparse type: a whole number, or ``random`` for a fresh one."""
    if text == "random":
        return secrets.randbelow(_SEED_LIMIT)
    return whole_number(0)(text)


# What a campaign writes into --out (an earlier run's outputs, if present).
_OUTPUTS = ("summary.json", "junit.xml", "cases", "inconclusive", "bugs", "report.html")  # what a campaign and ``refc report`` write


def _write(summary: "Summary", out: Path) -> None:
    """Write the campaign's outputs (as it goes, and at the end); a write that
    fails (a full or read-only disk, a link planted in the directory, which is
    never followed) is a ``UsageError`` naming the file."""
    try:
        from fuzz.campaign import write_outputs

        write_outputs(summary, out)
    except OSError as e:
        raise UsageError(f"cannot write {e.filename or out}: {e.strerror or e}") from None


def prepare_out(out: Path, clean: bool, graph: str | None = None) -> None:
    """Check ``out`` before any work: a directory that can be written. An
    earlier campaign's outputs there are moved into ``out/earlier-<UTC time>/``
    (``clean``: removed), so that the new run's files are never mixed with
    them; never the ``--graph`` file the campaign reads (a case of an earlier
    campaign fuzzed again into the same directory). ``UsageError`` (exit 2,
    one line) otherwise."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write there ({e.strerror or e})") from None
    earlier = [name for name in _OUTPUTS if (out / name).exists() or (out / name).is_symlink()]
    if not earlier:
        return
    held = next((name for name in earlier if graph is not None and _within(Path(graph), out / name)), None)
    if held is not None:
        fate = "remove (--clean)" if clean else "move aside"
        raise UsageError(f"--graph {graph}: is in {out / held}, an earlier campaign's output this one would {fate}; copy it out of {out} first")
    if clean:
        for name in earlier:
            path = out / name
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        return
    stamp = time.strftime("earlier-%Y%m%dT%H%M%SZ", time.gmtime())
    archive = out / stamp
    n = 1
    while archive.exists():
        n += 1
        archive = out / f"{stamp}-{n}"
    try:
        archive.mkdir()
        for name in earlier:
            (out / name).rename(archive / name)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot move the earlier campaign's outputs aside ({e.strerror or e})") from None
    print(f"refc fuzz: moved the earlier campaign's outputs in {out} to {archive}", file=sys.stderr)


def _within(path: Path, place: Path) -> bool:
    """Whether ``path`` is the file ``place`` or lies under the directory ``place``, links followed."""
    resolved, where = Path(os.path.realpath(path)), Path(os.path.realpath(place))
    return resolved == where or resolved.is_relative_to(where)


def _intro(config: "CampaignConfig") -> str:
    """The first line, printed before any work: what runs, and how long."""
    target = [f"mutant {config.mutant}"] if config.mutant else []
    if config.graph_file is not None:
        target.append(f"graph {config.graph_file}")
    if config.target is not None:  # the target compiles the graph itself: no scheduler or pipeline of refc's
        target.append(f"target {config.target}")
    else:
        target.append("scheduler " + ", ".join(config.schedulers))
        target.append(f"pipeline {config.pipeline}")
    bounds = []
    if config.budget is not None:
        bounds.append(f"budget {config.budget:g}s (+{config.shrink_grace:g}s to shrink)")
    if config.max_cases is not None:
        bounds.append(f"at most {config.max_cases} {'case' if config.max_cases == 1 else 'cases'}")
    workers = f"{config.workers} {'worker' if config.workers == 1 else 'workers'}"
    return f"seed {config.seed}, {workers}; {'; '.join(target)}; {', '.join(bounds)}; out {config.out}"


def _github(summary: "Summary", out: Path) -> None:
    """Under GitHub Actions: ``::error`` annotations on stdout, and a Markdown
    report appended to ``$GITHUB_STEP_SUMMARY`` when that names a file."""
    from fuzz.campaign.reports import github_annotations, markdown_summary

    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    for line in github_annotations(summary, out):
        print(line)
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as f:
                f.write(markdown_summary(summary, out))
        except OSError as e:
            print(f"refc fuzz: cannot append to $GITHUB_STEP_SUMMARY {target} ({e.strerror})", file=sys.stderr)


def _cluster(args: argparse.Namespace, config: "CampaignConfig", stack: contextlib.ExitStack) -> tuple[Any, "CampaignConfig"]:
    """With ``--cluster``: the cluster's executor (closed, its futures
    cancelled, when ``stack`` ends) and the config with as many workers as the
    cluster has threads; else ``(None, config)``."""
    if args.cluster is None:
        return None, config
    if args.workers is not None:
        raise UsageError("--workers and --cluster exclude each other (a cluster runs as many chunks at once as it has threads)")
    from fuzz.campaign.cluster import cluster_executor
    from fuzz.campaign.summary import plugin_modules

    executor, threads = stack.enter_context(cluster_executor(args.cluster, plugin_modules(config)))
    return executor, dataclasses.replace(config, workers=threads)


def _given_graph(path: str | None) -> dict[str, Any]:
    """With ``--graph G``: the config fields of a campaign over G, loaded as
    ``refc check`` loads it and checked before any work: malformed is the
    loader's one line, and a graph that breaks an invariant is bad input here
    (a campaign needs a valid graph): exit 2, one line naming the file, the
    invariant and the nodes; so is one whose own values the reference cannot
    run (an id beyond its table), which every case would report."""
    if path is None:
        return {}
    from refcompiler.errors import ExecutionError
    from refcompiler.graph_json import load_graph
    from refcompiler.reference import run_reference
    from refcompiler.verifier import violations

    graph = load_graph(path)
    for v in violations(graph):
        names = f" [{', '.join(v.names)}]" if v.names else ""
        raise UsageError(f"--graph {path}: {v.invariant}: {v.detail}{names}; a campaign needs a valid graph (refc check {path})")
    try:
        run_reference(graph, runs=2)
    except ExecutionError as e:
        raise UsageError(f"--graph {path}: the reference cannot run it: {e}; a campaign needs a graph it runs (refc run {path} --reference --runs 2)") from None
    return {"graph": graph, "graph_file": path}


# ``--case-seconds``' default: ``CASE_SECONDS``, or for generated graphs checked by
# refc's compiler (a user's scheduler or pass included) a budget's ``BUDGET_SHARE``,
# when less, but never under ``CASE_SECONDS_FLOOR`` (a case of at most --max-nodes
# nodes takes milliseconds; the symbolic stage's Z3 may take 2 s on each of its programs)
CASE_SECONDS, CASE_SECONDS_FLOOR, BUDGET_SHARE = 60.0, 20.0, 1 / 3


def case_seconds(given: float | None, budget: float | None, *, generated: bool) -> float:
    """The time a case may take before it is a timeout finding: ``given``
    (``--case-seconds``), else the default. A hang in a user's pass under a
    60 s budget was found at 60 s, with no time left to shrink or replay it; a
    given graph (``--graph``, which may be large) or a target (whose first
    compile may take long) keeps ``CASE_SECONDS``."""
    if given is not None:
        return given
    if not generated or budget is None:
        return CASE_SECONDS
    return min(CASE_SECONDS, max(CASE_SECONDS_FLOOR, budget * BUDGET_SHARE))


def run(args: argparse.Namespace) -> int:
    from fuzz.campaign import CampaignConfig, PlainProgress, RichProgress, default_workers, run_campaign
    from refcompiler.mutants import get as get_mutant
    from refcompiler.passes import resolve_pipeline
    from refcompiler.schedulers import SCHEDULERS, resolve_scheduler

    # Fail fast, in this process, on names a worker could not resolve.
    if args.fuzz_mutant is not None:
        get_mutant(args.fuzz_mutant)
    if args.scheduler is not None:
        resolve_scheduler(args.scheduler)
    resolve_pipeline(args.pipeline)
    workers = worker_count(args.workers, force=args.force_workers)
    fuzz_target.check_target(args.target)
    if args.graph is not None and (args.max_nodes is not None or args.max_dim is not None):
        raise UsageError("--max-nodes and --max-dim size the generated graphs; with --graph every case is that graph")
    if args.max_nodes is not None:  # a larger graph is more than refc reads (REFC_MAX_NODES)
        limits.check("nodes", args.max_nodes, "--max-nodes")
    given = _given_graph(args.graph)
    out = Path(args.out)
    out_dir(args.out)
    budget = args.budget if args.budget is not None or args.max_cases is not None else 60.0
    config = CampaignConfig(
        budget=budget,
        max_cases=args.max_cases,
        seed=args.seed,
        workers=workers or default_workers(),
        mutant=args.fuzz_mutant,
        schedulers=(args.scheduler,) if args.scheduler else tuple(SCHEDULERS),
        pipeline=args.pipeline,
        out=out,
        **{k: v for k, v in (("max_nodes", args.max_nodes), ("max_dim", args.max_dim)) if v is not None},
        symbolic={"auto": None, "on": True, "off": False}[args.symbolic],
        case_seconds=case_seconds(args.case_seconds, budget, generated=args.graph is None and args.target is None),
        shrink_grace=args.shrink_grace,
        command=shlex.join(["refc", *sys.argv[1:]]) if sys.argv[1:2] == ["fuzz"] else None,
        target=args.target,
        # a target is checked on valid graphs; invalid ones test refc's verifier only
        # (and a campaign over one given graph checks only that valid graph)
        **({"invalid_share": 0.0} if args.target or given else {}),
        **given,
    )
    with contextlib.ExitStack() as stack:
        executor, config = _cluster(args, config, stack)
        print(f"refc fuzz: {_intro(config)}", file=sys.stderr, flush=True)
        progress = RichProgress(sys.stderr) if sys.stderr.isatty() else PlainProgress(sys.stderr)
        with locked_out(args.out):
            prepare_out(out, args.clean, args.graph)
            summary = run_campaign(config, executor=executor, progress=progress, on_change=lambda s: _write(s, out))
    with _unbroken(summary.interrupted is not None):
        return _report(summary, config, out, args.target)


@contextlib.contextmanager
def _unbroken(interrupted: bool) -> Iterator[None]:
    """After an interrupted campaign (whose final summary is on disk), one more
    Ctrl-C of a double one does not cut the report short or change the exit
    code: SIGINT and SIGTERM are ignored for the block (main thread only)."""
    if not interrupted or threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


def _report(summary: "Summary", config: "CampaignConfig", out: Path, target: str | None) -> int:
    """What the campaign found, on stdout (and as bug folders for a target), and the exit code."""
    from fuzz.campaign.reports import inconclusive_text, unsettled_lines
    from fuzz.campaign.summary import replay_command
    from refcompiler.limits import printable

    doc = summary.to_doc()
    print(
        f"refc fuzz: {doc['cases']} cases ({doc['cases_per_second']}/s), {doc['schedules']} schedules "
        f"({doc['schedules_per_second']}/s) in {doc['seconds']:.1f}s; {doc['failures']} failing, "
        f"{doc['distinct_failures']} distinct; wrote {out / 'summary.json'}"
    )
    for line in fuzz_target.summary_lines(doc):
        print(line)
    bugs = fuzz_target.write_bugs(doc, out, target)
    for entry in doc["signatures"]:
        # one line each: names a user's pass or target made (a newline in an instruction's name) are escaped
        unreproduced = "" if entry["reproduces"] else f" (not confirmed on replay: {printable(str(entry['reproduces_reason'] or 'no reason recorded'))})"
        print(f"  {printable(entry['text'])}: {printable(entry['explanation'])}{unreproduced}")
        print(f"    case {out / entry['case']} ({plural(entry['nodes'], 'node')}); replay: {replay_command(config, str(out / entry['case']))}")
    for folder in bugs:
        script = folder / "repro.py"
        if script.is_file():
            print(f"  bug folder {folder}: python {script}")
        else:  # the target's bug_files wrote no script (e.g. torch-inductor, a plug-in's own files)
            print(f"  bug folder {folder}: {', '.join(sorted(p.name for p in folder.iterdir()))} (no repro.py: the target writes none)")
    if doc["symbolic_inconclusive"]["programs"]:  # not findings, and no exit code says them: they are printed
        for line in unsettled_lines(doc, out):
            print(f"  {printable(line)}")
    _github(summary, out)
    for lost in doc["lost_chunks"]:
        print(f"  lost chunk {lost['chunk']} ({plural(lost['cases'], 'case')}): {lost['reason']}")
    if summary.interrupted:
        print(f"refc fuzz: interrupted by {summary.interrupted}{'' if summary.failed else ', nothing found'}", file=sys.stderr)
    if summary.failed:
        return 1
    if summary.interrupted:
        return 143 if summary.interrupted == "SIGTERM" else 130
    if summary.inconclusive:
        print(f"refc fuzz: inconclusive: {inconclusive_text(summary)}; the lost chunks above say where", file=sys.stderr)
        return 3
    return 0
