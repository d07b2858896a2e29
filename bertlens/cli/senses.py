"""Commands on a word's senses in a corpus: senses."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add the commands (none yet)."""
