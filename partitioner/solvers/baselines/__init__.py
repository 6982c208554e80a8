"""Engine baselines: what users get today, each replayed from the engine's own code.

`even` (vLLM `get_pp_indices`), `memory` (llama.cpp `load_tensors` default split),
`params` (DeepSpeed `partition_balanced` on parameters), `speed` (Metis-like greedy).
Each module has `solve(problem) -> Solution` with `optimal=False`, `status="BASELINE"`;
a split that breaks a memory limit is `feasible=False` with the reason.
"""

from __future__ import annotations

from partitioner.registry import BASELINES

__all__ = ["BASELINES"]
