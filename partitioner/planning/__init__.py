"""The default answer of `partition plan`: which objective runs, the serving answer over several
machines, what one machine's loss costs (objective.py, serving.py, answer.py)."""

__all__: list[str] = []
