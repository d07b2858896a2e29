"""The local web explorer: a JSON API over the library's functions, and a page (plain JS + plotly) that calls it.

`create_app(models, limits)` builds the FastAPI app; `bertlens serve` runs it. FastAPI, pydantic and uvicorn are
imported only inside these modules' functions, so importing bertlens never loads them.
"""

from __future__ import annotations

from .app import create_app
from .limits import ServerLimits

__all__ = ["ServerLimits", "create_app"]
