"""The one registry of names: objectives, regimes, orders, solvers, export targets, TP modes.

Every list of names the planner accepts lives here once. The problem, the solver dispatch, the
export dispatch, the report and the CLI's choices all read it, so a name added here is offered
everywhere and a name missing here is refused everywhere with the list of valid ones. It imports
nothing (no numpy, no yaml), so `partition --help` stays instant.

Cost-model engines (`engine:` in cluster.yaml, `--engine`) are data, not names: they are the ids
of the shipped `models/presets/engines.yaml`, listed by `partitioner.models.catalog.ids("engines")`.
"""

from __future__ import annotations

__all__ = [
    "OBJECTIVES",
    "PLAN_OBJECTIVES",
    "REGIMES",
    "ORDERS",
    "AUTO",
    "SOLVERS",
    "EXACT",
    "BASELINES",
    "BASELINE_ENGINES",
    "SOLVER_CHOICES",
    "EXACT_CHOICES",
    "EXPORT_TARGETS",
    "LAUNCH_TARGETS",
    "UNIFORM_TP_ENGINES",
    "TP_MODES",
]

# Objectives of `partition plan` (docs/algorithms.md §1). "serve" is an outer search over
# (batch, in_flight) (partitioner.serving.search) that calls the exact solvers on throughput problems.
OBJECTIVES: tuple[str, ...] = ("balanced", "throughput", "makespan", "serve")
PLAN_OBJECTIVES: tuple[str, ...] = OBJECTIVES[:3]  # the lexicographic plans a Problem solves directly
REGIMES: tuple[str, ...] = ("async", "blocking")  # docs/theory.md Thm 2 / Thm 3
ORDERS: tuple[str, ...] = ("free", "fixed")

AUTO = "auto"  # the exact DP where it applies, else CP-SAT seeded by it (partitioner.solvers)
SOLVERS: dict[str, str] = {  # name -> module exposing solve(problem) -> Solution
    "dp": "partitioner.solvers.dp",
    "cpsat": "partitioner.solvers.cpsat",
    "brute": "partitioner.solvers.brute",
    "even": "partitioner.solvers.baselines.even",
    "memory": "partitioner.solvers.baselines.memory",
    "params": "partitioner.solvers.baselines.params",
    "speed": "partitioner.solvers.baselines.speed",
}
EXACT: tuple[str, ...] = ("dp", "cpsat", "brute")
BASELINES: tuple[str, ...] = ("even", "memory", "params", "speed")
BASELINE_ENGINES: dict[str, str] = {  # whose split rule each baseline replays (cited in its module)
    "even": "vLLM",
    "memory": "llama.cpp",
    "params": "DeepSpeed",
    "speed": "speed-proportional",
}
SOLVER_CHOICES: tuple[str, ...] = (AUTO, *SOLVERS)
EXACT_CHOICES: tuple[str, ...] = (AUTO, *EXACT)

# Export targets: name -> (module, function, takes CUDA ordinals, takes rpc endpoints, one line).
EXPORT_TARGETS: dict[str, tuple[str, str, bool, bool, str]] = {
    "vllm": ("partitioner.export.vllm", "render_vllm", True, False, "vllm serve (+ ray start per host)"),
    "sglang": ("partitioner.export.sglang", "render", True, False, "sglang.launch_server per node"),
    "trtllm": ("partitioner.export.trtllm", "render", True, False, "trtllm-serve + pp_partition YAML"),
    "llamacpp": ("partitioner.export.llamacpp", "render", True, True, "rpc-server per remote GPU + llama-server"),
    "deepspeed": ("partitioner.export.deepspeed", "render", False, False, "PipelineModule parts"),
    "torchgpipe": ("partitioner.export.torchgpipe", "render", True, False, "GPipe balance and devices"),
    "megatron": ("partitioner.export.megatron", "render", False, False, "pipeline-model-parallel layout"),
    "json": ("partitioner.export.single", "_json", False, False, "the plan itself"),
}
LAUNCH_TARGETS: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp")  # targets that launch a server
# Engines that take one --tensor-parallel-size for every pipeline stage: vLLM
# (vllm/config/parallel.py ParallelConfig.tensor_parallel_size), SGLang (--tp-size,
# python/sglang/srt/server_args.py ServerArgs.tp_size), TensorRT-LLM (Mapping.tp_size,
# tensorrt_llm/mapping.py).
UNIFORM_TP_ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm")

# Tensor-parallel grouping modes of `plan --tp` (partitioner.deploy.groups).
TP_MODES: tuple[str, ...] = ("auto", "uniform", "node", "off")
