"""Pictures of results: `render(result, "out.png")` as PNG, SVG or interactive HTML."""

from .render import Rendered, render
from .style import PlotOptions

__all__ = ["PlotOptions", "Rendered", "render"]
