"""Names are data, never code: which characters a user string may not hold, and how one is shown.

A name, host or path the user writes (cluster.yaml, model.yaml, plan.json) ends up in terminal
output, in comments of generated shell scripts and in engine arguments. Control characters there
are never meant: a newline ends a script comment (the next line runs), ESC and the C1 controls
drive the terminal (``"\\e[2J"`` clears it, OSC 8 hides a link), U+2028/U+2029 break lines for
many editors and the bidirectional overrides reorder what a reviewer sees (CVE-2021-42574,
"Trojan Source"). So they are refused at load (`control_problem`) and escaped wherever a string is
printed anyway (`escape_control`). Tab counts as a control character too: no name needs one.
"""

from __future__ import annotations

__all__ = ["CONTROL", "control_problem", "escape_control"]

#: C0 (including tab and newline), DEL, C1, the Unicode line/paragraph separators and the
#: bidirectional embedding/override/isolate controls (Unicode TR#9 §2).
CONTROL: frozenset[str] = frozenset(
    [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
)
_ESCAPES = {ord(c): f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in CONTROL}


def control_problem(text: str) -> str | None:
    """Why `text` cannot be a name (the first control character and its offset), or None."""
    for i, ch in enumerate(text):
        if ch in CONTROL:
            return f"must not contain control characters (got {escape_control(ch)} at offset {i} in {escape_control(repr(text))})"
    return None


def escape_control(text: str) -> str:
    """`text` with every control character shown as ``\\xNN``/``\\uNNNN``: one line, inert in a terminal."""
    return text.translate(_ESCAPES)
