"""The command reference of docs/commands.md, written from the click commands themselves: each command's usage, what
it does, and every argument and option with its choices and default.

    python -m bertlens.cli.reference docs/commands.md     # rewrites the reference part of the page

tests/test_docs.py fails when the page's reference is not what this writes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from .common import SHARED

BEGIN = "<!-- The reference below is written by `python -m bertlens.cli.reference docs/commands.md`. -->"
END = "<!-- End of the written reference. -->"


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Every command as typed ("plot tokens"), in `bertlens --help`'s order."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        found = group.get_command(ctx, name)
        if isinstance(found, click.Group):
            yield from commands(found, (*prefix, name))
        elif found is not None:
            yield " ".join((*prefix, name)), found


def _cell(text: str) -> str:
    """`text` in a Markdown table cell: bars and brackets escaped (`[CLS]` is no link), on one line."""
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]").replace("\n", " ")


def _takes(param: click.Parameter, ctx: click.Context) -> str:
    """What a parameter takes: its choices, or its placeholder; several values marked with …"""
    if isinstance(param, click.Option) and param.is_flag:
        return ""
    if isinstance(param.type, click.Choice):
        taken = " \\| ".join(f"`{choice}`" for choice in param.type.choices)
    else:
        taken = f"`{param.metavar or param.type.name.upper()}`".replace("...", "")
    return taken + (" …" if param.multiple or param.nargs == -1 else "")


def _default(param: click.Parameter) -> str:
    default = param.to_info_dict()["default"]  # None where there is none
    if (isinstance(param, click.Option) and param.is_flag) or default in (None, ()):
        return ""
    if isinstance(default, (tuple, list)):
        return " ".join(f"`{value}`" for value in default)
    return f"`{default}`"


def command_reference(name: str, command: click.Command) -> str:
    """One command's section: usage, description, and a table of its arguments and options."""
    ctx = click.Context(command, info_name=f"bertlens {name}")
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"### bertlens {name}", "", f"`bertlens {name} {usage}`", ""]
    lines += [_cell(command.help or ""), "", "| argument or option | takes | default | what |", "|---|---|---|---|"]
    for param in command.params:
        if getattr(param, "hidden", False) or param.name in SHARED:
            continue
        if isinstance(param, click.Option):
            spelled = ", ".join(f"`{flag}`" for flag in [*param.opts, *param.secondary_opts])
            required = "required" if param.required else _default(param)
        else:
            spelled = f"`{(param.metavar or str(param.name).upper()).replace('...', '')}`"
            required = "" if param.required else "optional"
        lines.append(f"| {spelled} | {_takes(param, ctx)} | {required} | {_cell(getattr(param, 'help', '') or '')} |")
    return "\n".join(lines)


def reference() -> str:
    """The whole reference: every command's section, between the markers."""
    from . import program

    sections = [command_reference(name, command) for name, command in commands(program)]
    shared = (
        "Every command also takes `--model` (`-m`), `--offline` and `--json`, before or after its name, and `-h`/"
        "`--help`. Choices are listed as `a` \\| `b`; an option of several values (…) takes them after one flag "
        "(`--layers -4 -3 -2 -1`)."
    )
    return "\n\n".join([BEGIN, "## Reference", shared, *sections, END]) + "\n"


def rewrite(page: Path) -> bool:
    """Write the reference into `page` (after its own text, replacing the reference there); True if it changed."""
    text = page.read_text(encoding="utf-8")
    head = text.split(BEGIN)[0].rstrip("\n") + "\n\n"
    new = head + reference()
    if new == text:
        return False
    page.write_text(new, encoding="utf-8")
    return True


if __name__ == "__main__":
    changed = rewrite(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/commands.md"))
    print("rewritten" if changed else "already up to date")
