"""Run under the engines' venv (tests/engines/install.sh): parse command lines with each engine's
own argument parser, without starting anything. Reads a JSON list of argv lists on stdin, writes
a JSON list of {"ok": bool, "error": str} (or {"skip": reason} when an engine cannot be imported).

- `vllm serve ...` (with vLLM's CPU platform standing in for the GPU the CUDA wheel cannot find):
  the parser `vllm` itself builds (vllm/entrypoints/cli/main.py: the `serve`
  subcommand's `subparser_init`, i.e. `make_arg_parser` of vllm/entrypoints/common/cli_args.py),
  then `validate_parsed_serve_args` and `AsyncEngineArgs.from_cli_args` (types of every field).
- `python -m sglang.launch_server ...`: `ServerArgs.add_cli_args` on an ArgumentParser
  (python/sglang/srt/server_args.py, what `prepare_server_args` does), parsed.
- `ray start ...`: the click command `ray.scripts.scripts.start`, its context made (parsed,
  not invoked).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import traceback


def _vllm():
    # The CUDA wheel finds no GPU here, and its parser's defaults need a platform (DeviceConfig):
    # vLLM's own CPU platform stands in (vllm/platforms/__init__.py resolves `_current_platform` once).
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    vllm.platforms._current_platform = CpuPlatform()
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    try:  # 0.33.0
        from vllm.entrypoints.common.cli_args import validate_parsed_serve_args
    except ImportError:  # older layout
        from vllm.entrypoints.openai.cli_args import validate_parsed_serve_args
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older layout
        from vllm.utils import FlexibleArgumentParser

    def parse(argv: list[str]) -> None:
        top = FlexibleArgumentParser(prog="vllm")
        subparsers = top.add_subparsers(dest="subparser")
        ServeSubcommand().subparser_init(subparsers)
        args = top.parse_args(argv[1:])
        validate_parsed_serve_args(args)
        if getattr(args, "model_tag", None):
            args.model = args.model_tag
        AsyncEngineArgs.from_cli_args(args)

    return parse


def _sglang():
    from sglang.srt.server_args import ServerArgs

    def parse(argv: list[str]) -> None:
        parser = argparse.ArgumentParser(prog="sglang.launch_server")
        ServerArgs.add_cli_args(parser)
        parser.parse_args(argv[3:])

    return parse


def _ray():
    from ray.scripts.scripts import start

    def parse(argv: list[str]) -> None:
        start.make_context("ray start", list(argv[2:]))

    return parse


def kind(argv: list[str]) -> str:
    if argv[:2] == ["vllm", "serve"]:
        return "vllm"
    if argv[:3] == ["python", "-m", "sglang.launch_server"]:
        return "sglang"
    if argv[:2] == ["ray", "start"]:
        return "ray"
    raise ValueError(f"not an engine line: {argv[:3]}")


def main() -> None:
    lines = json.load(sys.stdin)
    parsers: dict[str, object] = {}
    out = []
    for argv in lines:
        k = kind(argv)
        if k not in parsers:
            try:
                parsers[k] = {"vllm": _vllm, "sglang": _sglang, "ray": _ray}[k]()
            except Exception as err:
                parsers[k] = f"{type(err).__name__}: {err}"
        parse = parsers[k]
        if isinstance(parse, str):
            out.append({"skip": f"{k} cannot be imported: {parse}"})
            continue
        buf = io.StringIO()
        try:
            with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(buf):
                parse(argv)
            out.append({"ok": True, "error": ""})
        except SystemExit as err:
            out.append({"ok": False, "error": f"exit {err.code}: {buf.getvalue()[-2000:]}"})
        except Exception:
            out.append({"ok": False, "error": traceback.format_exc()[-2000:]})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
