"""Commands on word senses across two sentences: same-sense, evaluate wic."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add the commands (none yet)."""
