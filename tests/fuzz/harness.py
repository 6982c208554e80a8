"""The fuzz harness: generated cases for every command of the CLI, run in-process, and the contract
each run must keep.

Commands are enumerated from `partitioner.cli.COMMANDS` (and the tables of nested lazy groups such
as `calibrate`), so a command another engineer adds is fuzzed without editing this file. A case is
drawn by introspecting the command's click parameters: each positional file argument gets a
generated document of the grammar its metavar names (MODEL.yaml, CLUSTER.yaml, STATS.csv,
TIMINGS.csv, PLAN.json) or a hostile path (a FIFO, a symlink loop, a directory, /dev/zero, a missing
file); each option gets a value of its click type or of the option grammar (tests/fuzz/grammar.py).

The contract (`problems`): the command exits 0, 2, 3 or 4; no traceback; on failure stderr ends
with exactly one ``error: `` line, and every other stderr line is one of the command's announced
kinds (``warning:``, ``note:``, ``wrote ``; solver progress before a solver failure), so in
practice one line; and it finishes
within the per-case time limit. Runs use click's CliRunner inside a fresh directory, so nothing is
written outside it, and a SIGALRM guards against a read that would block forever.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from hypothesis import strategies as st

from fuzz import grammar

__all__ = ["Case", "Outcome", "commands", "cases_for", "run_case", "problems", "CASE_SECONDS"]

#: A case that takes longer is a failure (`partition plan` on the seed example takes about 1 s):
#: CASE_SECONDS of this process's CPU time (ITIMER_PROF, which a loaded machine does not inflate),
#: or WALL_FACTOR times that on the wall clock (a blocked read, e.g. of a FIFO, uses no CPU).
CASE_SECONDS = 60.0
WALL_FACTOR = 4.0
EXIT_CODES = frozenset({0, 2, 3, 4})
#: `export --strict` (and `plan --export --strict`) refusals: partitioner.export.base.STRICT_EXIT_CODES.
STRICT_CODES = frozenset({3, 5, 6})
#: Lines a failing command may print before its error (what it announced while it worked); a
#: solver failure (exit 3 or 4) may also follow the solver's progress lines (indented). Bad input
#: (exit 2) must be found before any work, so there it is one line, or warnings and the line.
ALLOWED_EXTRA = ("warning:", "note:", "wrote ")
PROGRESS = (" ", "progress")
HOSTILE_PATHS = ("@fifo", "@loop", "@dir", "@missing", "/dev/zero", "/dev/full", "/dev/null", "-", "a\x00b.yaml")
NEVER = frozenset({"factory"})  # options whose value is code to import: never fuzzed with free text


@dataclass
class Case:
    """Command-line arguments and the files they name (relative to the run's directory)."""

    args: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)

    def describe(self) -> str:
        shown = {k: (v[:120] if isinstance(v, str) else v[:60]) for k, v in self.files.items()}
        return f"partition {' '.join(repr(a) if ' ' in a or not a else a for a in self.args)}  files={shown!r}"


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    exception: BaseException | None
    args: list[str] = field(default_factory=list)


class CaseTimeout(BaseException):
    """Raised by SIGALRM when a case runs past CASE_SECONDS."""


def commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command, as (path, command), from the CLI's registry."""
    from partitioner.cli import main

    out: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(group: click.Group, path: tuple[str, ...]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command, (*path, name))
            elif command is not None:
                out.append(((*path, name), command))

    walk(main, ())
    return out


def _document_for(metavar: str, name: str, clean: bool) -> st.SearchStrategy[str]:
    hint = f"{metavar} {name}".lower()
    if "cluster" in hint:
        return grammar.yaml_documents("cluster", clean)
    if "model" in hint or "template" in hint or "yaml" in hint:
        return grammar.yaml_documents("model", clean)
    if "stats" in hint:
        return grammar.csv_documents("gateway", clean)
    if "timing" in hint:
        return grammar.csv_documents("timings", clean)
    if "csv" in hint:
        return grammar.csv_documents("measurements", clean)
    if "plan" in hint or "json" in hint or "config" in hint:
        return grammar.json_documents(clean)
    return st.one_of(grammar.yaml_documents("model", clean), grammar.json_documents(clean),
                     grammar.csv_documents("timings", clean))


@st.composite
def _file_value(draw: st.DrawFn, param: click.Parameter, files: dict[str, str | bytes], index: int,
                clean: bool) -> str:
    if not clean and draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(HOSTILE_PATHS))
    metavar = param.metavar or param.name or ""
    suffix = Path(metavar).suffix or ".yaml"
    name = f"in{index}{suffix}"
    files[name] = draw(_document_for(metavar, param.name or "", clean))
    return name


def _is_output(param: click.Parameter) -> bool:
    name = (param.name or "").lower()
    return name in ("out", "md_out", "json_out", "html_out") or name.startswith("write_")


@st.composite
def _option_value(draw: st.DrawFn, param: click.Option, files: dict[str, str | bytes], index: int,
                  clean: bool) -> str:
    kind = param.type
    name = param.name or ""
    if _is_output(param):
        good = (f"out{index}.json", f"out{index}.yaml", f"out{index}.md", f"out{index}.html", f"out{index}.csv")
        bad = ("in0.yaml", "@dir", "@fifo", "/dev/full", "-", "nodir/x.yaml")
        return draw(st.sampled_from(good if clean else good + bad))
    if isinstance(kind, click.Choice):
        choices = st.sampled_from([str(c) for c in kind.choices])
        return draw(choices if clean else st.one_of(choices, grammar.option_values()))
    if clean and name in grammar.SENSIBLE:
        return draw(st.sampled_from(grammar.SENSIBLE[name]))
    if clean and isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        return draw(st.sampled_from(("1", "2", "8")))
    if clean and not isinstance(kind, click.Path):
        return ""  # no sensible value known: the caller leaves the option out
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        return draw(st.one_of(st.sampled_from(("1", "2", "8", "0", "-1", "1e308", "nan", "9" * 30)),
                              grammar.option_values()))
    if isinstance(kind, click.Path) or (param.metavar or "").lower().endswith((".yaml", ".csv", ".json")):
        return draw(_file_value(param, files, index, clean))
    return draw(grammar.option_values())


@st.composite
def cases_for(draw: st.DrawFn, path: tuple[str, ...], command: click.Command) -> Case:
    """A generated invocation of `command` (at `path` below `partition`): a third of the cases are
    clean (valid documents and sensible values, to reach the solvers and writers), a third have
    one hostile part, a third are hostile throughout."""
    files: dict[str, str | bytes] = {}
    args = list(path)
    mode = draw(st.sampled_from(["clean", "one", "many"]))
    params = [p for p in command.params if not (isinstance(p, click.Option) and p.name in NEVER)]
    faulty = draw(st.integers(0, max(len(params) - 1, 0))) if mode == "one" else -1
    for i, param in enumerate(params):
        clean = mode == "clean" or (mode == "one" and i != faulty)
        if isinstance(param, click.Argument):
            if isinstance(param.type, click.Choice) and (clean or draw(st.integers(0, 3))):
                args.append(draw(st.sampled_from([str(c) for c in param.type.choices])))
            elif isinstance(param.type, click.Path) or param.metavar:
                args.append(draw(_file_value(param, files, i, clean)))
            else:
                args.append(draw(grammar.option_values()))
        elif isinstance(param, click.Option):
            if not (param.required or i == faulty or draw(st.integers(0, 2)) == 0):
                continue
            flag = max(param.opts, key=len)
            if param.is_flag:
                args.append(flag)
                continue
            for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
                value = draw(_option_value(param, files, i, clean))
                if value or not clean or param.required:
                    args += [flag, value]
    if mode == "many" and draw(st.integers(0, 4)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(("--force", "--bogus", "-h", "--"))))
    return Case(args, files)


def _materialise(case: Case, where: Path) -> list[str]:
    for name, content in case.files.items():
        target = where / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8", errors="surrogatepass"))
    os.mkfifo(where / "fifo")
    (where / "loop").symlink_to(where / "loop")
    (where / "dir").mkdir()
    return [a.replace("@", str(where) + "/", 1) if a.startswith("@") else a for a in case.args]


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout(f"case ran past {CASE_SECONDS} s of CPU (or {CASE_SECONDS * WALL_FACTOR:g} s of wall clock)")


def run_case(case: Case, where: Path, seconds: float = CASE_SECONDS) -> Outcome:
    """Run `case` in-process in the empty directory `where`."""
    from click.testing import CliRunner

    from partitioner.cli import main

    args = _materialise(case, where)
    runner = CliRunner()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    previous_prof = signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    start = time.perf_counter()
    cwd = os.getcwd()
    try:
        os.chdir(where)
        res = runner.invoke(main, args, prog_name="partition", catch_exceptions=True)
        exception = res.exception if not isinstance(res.exception, SystemExit) else None
        return Outcome(res.exit_code, res.stdout, res.stderr, time.perf_counter() - start, exception, list(case.args))
    except CaseTimeout as exc:
        return Outcome(-1, "", "", time.perf_counter() - start, exc, list(case.args))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGPROF, previous_prof)
        os.chdir(cwd)


def problems(outcome: Outcome) -> list[str]:
    """How `outcome` breaks the contract (empty: it keeps it)."""
    found = []
    if isinstance(outcome.exception, CaseTimeout):
        return [f"no result within {CASE_SECONDS} s"]
    if outcome.exception is not None:
        found.append(f"escaped exception {type(outcome.exception).__name__}: {outcome.exception}")
    codes = EXIT_CODES | (STRICT_CODES if "--strict" in outcome.args else frozenset())
    if outcome.exit_code not in codes:
        found.append(f"exit code {outcome.exit_code} not in {sorted(codes)}")
    if "Traceback (most recent call last)" in outcome.stdout + outcome.stderr:
        found.append("traceback printed")
    if outcome.exit_code not in (0, -1):  # every refusal, strict ones included, is one error line
        lines = outcome.stderr.splitlines()
        errors = [line for line in lines if line.startswith("error: ")]
        if len(errors) != 1 or not lines or lines[-1] != errors[0]:
            found.append(f"stderr is not one error line at the end: {outcome.stderr[-400:]!r}")
        # progress lines appear after a second of work, so on a loaded machine before any failure
        allowed = ALLOWED_EXTRA + PROGRESS
        extra = [line for line in lines[:-1] if not line.startswith(allowed)]
        if extra:
            found.append(f"unexpected stderr lines before the error: {extra[:3]!r}")
    return found


def all_commands_strategy() -> st.SearchStrategy[Case]:
    """A case for any command of the registry."""
    return st.sampled_from(commands()).flatmap(lambda pc: cases_for(*pc))


def iter_command_names() -> Iterator[str]:
    for path, _ in commands():
        yield " ".join(path)


@dataclass
class Run:
    """What `run_many` tried: cases per command, each failure (case, problems, stderr tail) and
    the time of every case."""

    seed: int
    tried: dict[str, int] = field(default_factory=dict)
    failures: list[tuple[str, list[str], str]] = field(default_factory=list)
    timings: list[tuple[float, str]] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(self.tried.values())


def run_many(cases: int, seed: int, chosen: list[tuple[tuple[str, ...], click.Command]] | None = None,
             until: float | None = None, batch_size: int = 200, workers: int = 1) -> Run:
    """`cases` generated cases over `chosen` commands (all by default), in batches of `batch_size`
    with consecutive hypothesis seeds derived from `seed`; with `until` (a time.monotonic()
    deadline), as many whole batches as fit instead. `workers` > 1 splits the cases over that
    many forked processes (worker w draws from seed·workers + w), so a run and its replay with the
    same seed and workers try the same cases. Shared by tests/fuzz/test_fuzz_scale.py (CI: 10,000
    cases) and benchmarks/fuzz.py."""
    if workers > 1:
        import multiprocessing

        shares = [(cases * (w + 1)) // workers - (cases * w) // workers for w in range(workers)]
        paths = None if chosen is None else [p for p, _ in chosen]  # commands do not pickle: names do
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.starmap(_run_share_of, [(n, seed * workers + w, paths, until, batch_size)
                                                 for w, n in enumerate(shares)])
        out = Run(seed)
        for part in parts:
            for name, n in part.tried.items():
                out.tried[name] = out.tried.get(name, 0) + n
            out.failures += part.failures
            out.timings += part.timings
        return out
    return _run_share(cases, seed, chosen, until, batch_size)


def _run_share_of(cases: int, seed: int, paths: list[tuple[str, ...]] | None, until: float | None,
                  batch_size: int) -> Run:
    chosen = None if paths is None else [(p, c) for p, c in commands() if p in paths]
    return _run_share(cases, seed, chosen, until, batch_size)


def _run_share(cases: int, seed: int, chosen: list[tuple[tuple[str, ...], click.Command]] | None,
               until: float | None, batch_size: int) -> Run:
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as seed_

    chosen = commands() if chosen is None else chosen
    out = Run(seed)

    def batch(batch_seed: int, examples: int) -> None:
        @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(chosen).flatmap(lambda pc: cases_for(*pc)))
        def one(case: Case) -> None:
            with tempfile.TemporaryDirectory() as where:
                outcome = run_case(case, Path(where))
            words = [a for a in case.args if a not in ("--force", "--bogus", "-h", "--")]
            name = next((" ".join(p) for p, _ in chosen if words[: len(p)] == list(p)), words[0] if words else "")
            out.tried[name] = out.tried.get(name, 0) + 1
            out.timings.append((outcome.seconds, case.describe()[:200]))
            found = problems(outcome)
            if found:
                out.failures.append((case.describe()[:400], found, outcome.stderr[-300:]))

        seed_(batch_seed)(one)()

    k = 0
    while (until is None and out.cases < cases) or (until is not None and time.monotonic() < until):
        before = out.cases
        batch(seed * 100_003 + k, batch_size if until is not None else min(batch_size, cases - out.cases))
        k += 1
        if out.cases == before:  # hypothesis found nothing new to try: stop rather than spin
            break
    return out
