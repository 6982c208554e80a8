"""A deliberately broken command, registered only by test_fuzz.py, to prove the harness catches one."""

from __future__ import annotations

import click


@click.command("broken")
@click.argument("name", required=False)
def broken(name: str | None) -> None:
    """Fails with an exception no input should cause (a bug)."""
    raise KeyError(name)
