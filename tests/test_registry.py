"""The one registry of names (partitioner.registry): every consumer reads it, nothing keeps a copy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from partitioner import registry
from partitioner.cli import main


def _choices(command: str, option: str) -> tuple[str, ...]:
    cmd = main.get_command(click.Context(main), command)
    assert cmd is not None
    for param in cmd.params:
        if f"--{option}" in param.opts:
            assert isinstance(param.type, click.Choice), (command, option, param.type)
            return tuple(param.type.choices)
    raise AssertionError(f"{command} has no --{option}")


@pytest.mark.parametrize(("command", "option", "names"), [
    ("plan", "objective", registry.OBJECTIVES),
    ("plan", "solver", registry.SOLVER_CHOICES),
    ("plan", "export", tuple(registry.EXPORT_TARGETS)),
    ("plan", "regime", registry.REGIMES),
    ("plan", "order", registry.ORDERS),
    ("plan", "tp", registry.TP_MODES),
    ("export", "to", tuple(registry.EXPORT_TARGETS)),
    ("report", "objective", registry.OBJECTIVES),  # serve too: it gives the serve search most of the budget
    ("report", "tp", registry.TP_MODES),
    ("report", "solver", registry.EXACT_CHOICES),
    ("score", "regime", registry.REGIMES),
])
def test_cli_choices_are_the_registry(command: str, option: str, names: tuple[str, ...]) -> None:
    assert _choices(command, option) == names


def test_library_modules_read_the_registry() -> None:
    from partitioner import export, problem, solvers
    from partitioner.deploy import deployment
    from partitioner.report import compare

    assert problem.OBJECTIVES is registry.OBJECTIVES and problem.REGIMES is registry.REGIMES
    assert solvers.SOLVERS is registry.SOLVERS and solvers.BASELINES is registry.BASELINES
    assert export.REGISTRY is registry.EXPORT_TARGETS and export.ENGINES is registry.LAUNCH_TARGETS
    assert compare.OPTIMAL is registry.PLAN_OBJECTIVES and compare.BASELINE_LABELS is registry.BASELINE_ENGINES
    assert deployment.UNIFORM_TP_ENGINES is registry.UNIFORM_TP_ENGINES


def test_every_registered_solver_and_target_resolves() -> None:
    for name, module in registry.SOLVERS.items():
        assert callable(importlib.import_module(module).solve), name
    for name, (module, function, *_rest) in registry.EXPORT_TARGETS.items():
        assert callable(getattr(importlib.import_module(module), function)), name
    assert set(registry.EXACT) | set(registry.BASELINES) == set(registry.SOLVERS)
    assert set(registry.BASELINE_ENGINES) == set(registry.BASELINES)
    assert set(registry.UNIFORM_TP_ENGINES) <= set(registry.LAUNCH_TARGETS) <= set(registry.EXPORT_TARGETS)
    assert registry.PLAN_OBJECTIVES == tuple(o for o in registry.OBJECTIVES if o != "serve")


def test_engine_option_takes_the_shipped_engine_presets() -> None:
    from partitioner.models import catalog

    r = CliRunner().invoke(main, ["plan", "m.yaml", "c.yaml", "--engine", "vlm"])
    assert r.exit_code == 2
    valid = ", ".join(catalog.ids("engines"))
    assert f"'vlm' is not a shipped engine preset; valid: {valid}" in r.output
    assert "vllm" in catalog.ids("engines") and "generic" in catalog.ids("engines")


def test_the_registry_imports_nothing_heavy() -> None:
    code = ("import sys; import partitioner.registry; "
            "print(sorted(m for m in ('numpy', 'yaml', 'pydantic', 'click', 'ortools') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
