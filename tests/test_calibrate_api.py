"""The calibrate package's public names resolve lazily, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

from partitioner import calibrate


def test_every_exported_name_resolves() -> None:
    for name in calibrate.__all__:
        assert getattr(calibrate, name) is not None, name
    assert sorted(calibrate.__all__) == dir(calibrate)


def test_importing_the_package_loads_neither_numpy_nor_pydantic() -> None:
    code = "import sys, partitioner.calibrate; print(sorted(m for m in ('numpy', 'pydantic', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_help_of_every_command_stays_free_of_heavy_imports() -> None:
    """`partition ... --help` is instant: no numpy, pydantic, ortools, matplotlib, rich or torch."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from partitioner.cli import COMMANDS, main\n"
        "from partitioner.cli.calibrate import SUBCOMMANDS\n"
        "runs = [[c, '--help'] for c in COMMANDS] + [['calibrate', s, '--help'] for s in SUBCOMMANDS]\n"
        "assert all(CliRunner().invoke(main, r).exit_code == 0 for r in runs)\n"
        "heavy = ('numpy', 'pydantic', 'ortools', 'matplotlib', 'rich', 'torch', 'yaml')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
