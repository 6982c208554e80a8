"""What-if variations: syntax, application to a real cluster spec, and diffs against the base plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_report_data import toy_tables

from partitioner.errors import ConfigError, InfeasibleError, InputError
from partitioner.problem import Problem
from partitioner.report.build import compare_plans
from partitioner.report.whatif import apply, diff, parse_variation, parse_variations, prepare, run
from partitioner.result import Plan
from partitioner.solvers.brute import solve as brute

SEED = Path(__file__).resolve().parents[1] / "examples" / "clusters" / "seed.yaml"


def test_parse_good() -> None:
    assert parse_variation("without", " gpu0 ").args == ("gpu0",)
    assert parse_variation("with", "rtx-3090@node-02").args == ("rtx-3090", "node-02")
    assert parse_variation("link", "a:b=0.5,12.5").args == ("a", "b", 0.5, 12.5)
    assert parse_variation("regime", "blocking").name == "--regime blocking"
    vs = parse_variations(without=["x"], with_=["g@n"], phase=["prefill"])
    assert [v.kind for v in vs] == ["without", "with", "phase"]


@pytest.mark.parametrize(
    ("kind", "text", "match"),
    [
        ("without", "  ", "needs a device name"),
        ("with", "rtx-3090", r"GPU_ID@NODE \(got 'rtx-3090'\)"),
        ("with", "@node", "GPU_ID@NODE"),
        ("with", "a@b@c", "GPU_ID@NODE"),
        ("link", "a-b=1,2", r"A:B=latency_ms,bandwidth_gb_s \(got 'a-b=1,2'\)"),
        ("link", "a:b=1", "A:B=latency_ms"),
        ("link", "a:a=1,2", "must differ"),
        ("link", "a:b=x,2", "latency_ms 'x' is not a number"),
        ("link", "a:b=1,0", "bandwidth_gb_s must be"),
        ("link", "a:b=-1,2", "latency_ms must be"),
        ("regime", "sync", r"async, blocking \(got 'sync'\)"),
        ("phase", "train", r"decode, prefill \(got 'train'\)"),
    ],
)
def test_parse_bad(kind: str, text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_variation(kind, text)


def test_apply_to_real_cluster() -> None:
    from partitioner.models import load_cluster

    cluster = load_cluster(SEED)
    names = [d.name for d in cluster.devices]
    _, smaller, regime = apply(None, cluster, parse_variation("without", names[0]), "async")
    assert [d.name for d in smaller.devices] == names[1:] and regime == "async"
    assert apply(None, cluster, parse_variation("regime", "blocking"), "async")[2] == "blocking"
    with pytest.raises(ConfigError, match="'no-such-gpu'"):
        apply(None, cluster, parse_variation("without", "no-such-gpu"), "async")
    with pytest.raises(ConfigError, match="'nope'"):
        prepare(None, cluster, [parse_variation("link", f"{names[0]}:nope=1,1")], "async")


def _plan(latency: float, M: int = 8, regime: str = "async") -> Plan:
    problem = Problem(toy_tables(latency=latency), M=M, regime=regime)
    return Plan.from_solution(problem, brute(problem))


def test_diff_by_hand() -> None:
    base = compare_plans(Problem(toy_tables(latency=3.0), M=8), Ms=(1, 8), solver="brute", baselines=())[0]
    # A faster link: same split, d 3 -> 1: latency 7 -> 5, period 2 unchanged; T(8) 21 -> 19.
    w = diff(parse_variation("link", "A:B=1000,1"), base, "async", _plan(1.0))
    assert w.feasible and w.throughput == 0.5 and w.first_latency == 5.0
    # tokens/s in the closed loop (K = 1, B = 1): round trip 2 + 3 + 2 + d_ret 3 = 10 s -> 2 + 1 + 2 + 1 = 6 s
    assert w.d_throughput == pytest.approx((1 / 6 - 1 / 10) / (1 / 10)) and w.d_first_latency == pytest.approx((5 - 7) / 7)
    assert w.T == ((1, 5.0, pytest.approx(-2 / 7)), (8, 19.0, pytest.approx(-2 / 21)))
    # Blocking: the balanced plan still splits (tau_max 2), but T(8) = 7 + 7*5 = 42.
    wb = diff(parse_variation("regime", "blocking"), base, "async", _plan(3.0, regime="blocking"))
    assert {M: T for M, T, _ in wb.T}[8] == 42.0


def test_run_keeps_infeasible_variations() -> None:
    base = compare_plans(Problem(toy_tables(), M=8), Ms=(1,), solver="brute", baselines=())[0]
    v = parse_variation("without", "B")

    def planner(model, cluster, regime):
        raise InfeasibleError("the model needs 3.00 GB but the cluster has 2.00 GB usable in all")

    (w,) = run([(v, None, None, "async")], base, "async", planner)
    assert not w.feasible and "3.00 GB" in w.reason and w.throughput is None
