"""A griffe extension for the documentation site (mkdocs.yml loads it): the `>>>` examples in bertlens' docstrings,
written as `help()` shows them best, become code blocks on the site instead of Markdown block quotes."""

from __future__ import annotations

from typing import Any

import griffe


def fence_examples(text: str) -> str:
    """Wrap each run of doctest lines (from a `>>>` line to the next blank line) in a ```pycon fence.

    >>> fence_examples("Text.\\n\\n>>> 1 + 1\\n2").splitlines()[2]
    '```pycon'
    """
    out: list[str] = []
    fenced = False  # inside a ``` block the docstring wrote itself
    example = False
    for line in text.splitlines():
        stripped = line.strip()
        if example and not stripped:
            out.append("```")
            example = False
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and not example and stripped.startswith(">>>"):
            if out and out[-1].strip():
                out.append("")
            out.append("```pycon")
            example = True
        out.append(line)
    if example:
        out.append("```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
