"""A stage cap (`Problem.max_stages`, `partition plan --max-stages`): CP-SAT and auto against an
independent brute-force enumeration on seeded random small instances."""

from __future__ import annotations

import itertools

import pytest
from test_cpsat_props import random_tables

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import brute, cpsat, dp, solve


def _enumerate(problem: Problem, cap: int) -> tuple[float, ...] | None:
    """The best objective key over every plan of at most `cap` stages that fits (no solver code)."""
    best = None
    L, G = problem.L, problem.G
    for S in range(1, min(G, L, cap) + 1):
        for inner in itertools.combinations(range(1, L), S - 1):
            cuts = (0, *inner, L)
            seqs = itertools.combinations(range(G), S) if problem.order == "fixed" else itertools.permutations(range(G), S)
            for devices in seqs:
                m = evaluate(problem, devices, cuts)
                if not all(m.memory_gb <= m.capacity_gb * (1 + 1e-9) + 1e-12):
                    continue
                key = objective_key(problem, m)
                if best is None or lex_compare(key, best) < 0:
                    best = key
    return best


@pytest.mark.parametrize("seed", range(8))
def test_capped_solvers_match_the_enumeration(seed: int) -> None:
    objective, regime, order = list(itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking"),
                                                      ("free", "fixed")))[seed % 12]
    t = random_tables(seed, G=4, L=5, integer=seed % 2 == 0, twins=seed % 3 == 0, tied=False)
    t = t.__class__(**{**t.__dict__, "capacity_gb": t.capacity_gb * 2.5})  # caps of 1-2 stages can fit
    for cap in (1, 2, 3):
        problem = Problem(t, M=4, regime=regime, objective=objective, order=order, time_limit_s=30, max_stages=cap)
        want = _enumerate(problem, cap)
        for run in (brute.solve, lambda p: cpsat.solve(p, use_dp=False), lambda p: solve(p, "auto")):
            if want is None:
                with pytest.raises(InfeasibleError):
                    run(problem)
                continue
            sol = run(problem)
            assert len(sol.devices) <= cap
            got = objective_key(problem, evaluate(problem, sol.devices, sol.cuts))
            assert lex_compare(got, want) == 0, (cap, got, want)


def test_dp_refuses_a_binding_cap_and_a_loose_cap_changes_nothing() -> None:
    t = random_tables(3, G=3, L=4, integer=False, twins=False, tied=False)
    t = t.__class__(**{**t.__dict__, "capacity_gb": t.capacity_gb * 3})
    with pytest.raises(InputError, match="stage cap"):
        dp.solve(Problem(t, max_stages=2))
    loose = Problem(t, max_stages=3)
    assert not dp.capped(loose) and dp.solve(loose).devices == dp.solve(Problem(t)).devices
    with pytest.raises(InputError, match="max_stages must be"):
        Problem(t, max_stages=0)


def test_cli_max_stages_caps_the_plan_and_refuses_the_serve_answer() -> None:
    import json

    from click.testing import CliRunner

    from partitioner.cli import main

    args = ["plan", "examples/models/llama-3.1-8b.yaml", "examples/clusters/mixed-8gpu.yaml"]
    runner = CliRunner()
    free = json.loads(runner.invoke(main, [*args, "--objective", "balanced", "--json"]).stdout)
    got = runner.invoke(main, [*args, "--objective", "balanced", "--max-stages", "3", "--json"])
    assert got.exit_code == 0, got.output
    capped = json.loads(got.stdout)
    assert len(capped["stages"]) <= 3 < len(free["stages"]) and capped["tau_max"] >= free["tau_max"]
    bad = runner.invoke(main, [*args, "--max-stages", "2"])
    assert bad.exit_code != 0 and "--max-stages applies to one pipeline" in bad.output
