"""The benchmark command that measures a plan at its batch, in-flight count, input and output lengths.

vLLM (v0.31.0, vllm/benchmarks/serve.py `add_cli_args` and vllm/benchmarks/datasets.py
`add_dataset_parser`): `vllm bench serve --model M --dataset-name random --random-input-len I
--random-output-len O --num-prompts N --max-concurrency C --ignore-eos --save-result
--result-filename F`. The closed loop the planner scores (docs/theory.md §4) keeps K·B sequences
in flight, so the client's concurrency is C = K·B (per replica); the prompt is the workload's
prompt_tokens and the output the rest of its context (context − prompt_tokens); `--ignore-eos`
makes every request produce exactly that many tokens. N = 4·C prompts let the steady state
dominate the ramp. The result JSON (`--save-result`) is what `partition calibrate bench` reads.

llama.cpp (tools/llama-bench/llama-bench.cpp, `print_usage`): `llama-bench -m MODEL.gguf -p I -n O
-b B -o json` measures one sequence's prompt and generation speed (no concurrency).
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = ["BENCH_ENGINES", "bench_command", "bench_point"]

BENCH_ENGINES: tuple[str, ...] = ("vllm", "llamacpp")
PROMPTS_PER_SLOT = 4  # prompts per concurrent slot: the steady state outweighs ramp-up and drain


def bench_point(plan: Any) -> dict[str, int] | None:
    """(batch, in_flight, concurrency, input_len, output_len) a plan is scored at; None without serving."""
    s = getattr(plan, "serving", None)
    if s is None:
        return None
    w = (getattr(plan, "meta", None) or {}).get("workload") or {}
    context = int(getattr(s, "context", 0) or w.get("context") or 0)
    prompt = int(w.get("prompt_tokens") or 0) or max(1, context // 2)
    prompt = min(prompt, max(1, context - 1))
    return {"batch": int(s.batch), "in_flight": int(s.in_flight), "concurrency": int(s.batch) * int(s.in_flight),
            "input_len": prompt, "output_len": max(1, context - prompt)}


def bench_command(plan: Any, engine: str = "vllm", result_file: str = "bench.json") -> str | None:
    """The shell command measuring `plan` with `engine` (module doc); None when the plan has no
    serving numbers (a prefill workload or a profile). Pure: the plan in, one line out."""
    if engine not in BENCH_ENGINES:
        raise ValueError(f"engine must be one of {', '.join(BENCH_ENGINES)} (got {engine!r})")
    p = bench_point(plan)
    if p is None:
        return None
    model = (getattr(plan, "meta", None) or {}).get("model_id") or "MODEL"
    if engine == "llamacpp":
        args = ["llama-bench", "-m", "MODEL.gguf", "-p", str(p["input_len"]), "-n", str(p["output_len"]),
                "-b", str(p["batch"]), "-o", "json"]
        return shlex.join(args) + " > " + shlex.quote(result_file)
    args = ["vllm", "bench", "serve", "--model", str(model), "--dataset-name", "random",
            "--random-input-len", str(p["input_len"]), "--random-output-len", str(p["output_len"]),
            "--num-prompts", str(PROMPTS_PER_SLOT * p["concurrency"]), "--max-concurrency", str(p["concurrency"]),
            "--ignore-eos", "--save-result", "--result-filename", result_file]
    return shlex.join(args)
