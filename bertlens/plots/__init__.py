"""Pictures of results: `render(result, "out.png")` as PNG, SVG or interactive HTML."""
