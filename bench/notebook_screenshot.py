"""A screenshot of the tutorial notebook's key cells as Jupyter shows them: docs/screenshots/notebook.png.

Executes docs/tutorial.ipynb in a fresh kernel (nbclient, this interpreter) unless --no-execute, writes the cells
tagged "screenshot" (their code, their outputs' HTML, images and text, and the heading above each) into one page, and
has headless Chromium (the first Chromium on PATH, else Playwright's: tests/browser.py) photograph it. Nothing on
the page is fetched from anywhere.

    python bench/notebook_screenshot.py                    # writes docs/screenshots/notebook.png
    python bench/notebook_screenshot.py --save-notebook    # and stores the executed notebook (with outputs) in docs/
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/browser.py: the Chromium finder
from browser import MISSING, chromium, launch

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"
WIDTH = 1100

PAGE_STYLE = """<style>
body{margin:0;background:#fff;color:#1f2328;font-family:system-ui,-apple-system,'Segoe UI',sans-serif}
main{max-width:1040px;margin:0 auto;padding:18px 24px}
h1,h2{font-weight:600;margin:18px 0 6px} h1{font-size:22px} h2{font-size:17px}
p{font-size:14px;line-height:1.45;margin:4px 0 8px;max-width:900px} p code{font-size:12.5px}
.cell{display:grid;grid-template-columns:84px 1fr;gap:0 8px;margin:10px 0}
.prompt{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:#307fc1;text-align:right;padding-top:7px}
.prompt.out{color:#bf5b3d}
.code{background:#f5f7f9;border:1px solid #e0e4e8;border-radius:3px;padding:6px 10px;margin:0;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;white-space:pre-wrap}
.stream{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;white-space:pre-wrap;margin:4px 0}
.output{padding:4px 0;overflow-x:auto}
.dataframe{border-collapse:collapse;border:none;font-size:12px;font-variant-numeric:tabular-nums}
.dataframe th,.dataframe td{padding:3px 9px;border:none;text-align:right}
.dataframe thead{border-bottom:1px solid #333;vertical-align:bottom}
.dataframe tbody tr:nth-child(odd){background:#f5f5f5}
</style>"""


def markdown(text: str) -> str:
    """The little Markdown the tutorial uses: headings, paragraphs, `code`, **bold** and [links](…) (as text)."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        level = len(block) - len(block.lstrip("#"))
        inner = html.escape(block.lstrip("#").strip() if level else block)
        inner = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", inner)
        inner = re.sub(r"`([^`]+)`", r"<code>\1</code>", inner)
        inner = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", inner)
        out.append(f"<h{min(level, 2)}>{inner}</h{min(level, 2)}>" if level else f"<p>{inner}</p>")
    return "\n".join(out)


def output_html(output: dict[str, Any]) -> str:
    if output["output_type"] == "stream":
        return f'<pre class="stream">{html.escape(output["text"])}</pre>'
    if output["output_type"] == "error":
        return f'<pre class="stream" style="color:#b00">{html.escape(output["ename"] + ": " + output["evalue"])}</pre>'
    data = output.get("data", {})
    if "text/html" in data:
        return "".join(data["text/html"])
    if "image/png" in data:
        return f'<img src="data:image/png;base64,{data["image/png"]}">'
    return f'<pre class="stream">{html.escape("".join(data.get("text/plain", "")))}</pre>'


def page(notebook: Any) -> str:
    parts, heading = [], ""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
            heading = cell.source.strip().splitlines()[0]
        if cell.cell_type != "code" or "screenshot" not in cell.metadata.get("tags", []):
            continue
        if heading:
            parts.append(markdown(heading))
            heading = ""
        count = cell.get("execution_count") or " "
        label = {"execute_result": f"Out [{count}]:"}
        parts.append(
            f'<div class="cell"><div class="prompt">In [{count}]:</div>'
            f'<pre class="code">{html.escape(cell.source)}</pre></div>'
        )
        for output in cell.outputs:
            parts.append(
                f'<div class="cell"><div class="prompt out">{label.get(output["output_type"], "")}</div>'
                f'<div class="output">{output_html(output)}</div></div>'
            )
    return f"<!doctype html><html><head><meta charset=utf-8>{PAGE_STYLE}</head><body><main>{''.join(parts)}</main>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "notebook.png"))
    parser.add_argument("--no-execute", action="store_true", help="use the outputs stored in the notebook")
    parser.add_argument("--save-notebook", action="store_true", help="store the executed notebook in docs/")
    args = parser.parse_args()
    import nbformat
    from playwright.sync_api import sync_playwright

    if chromium() is None:
        raise SystemExit(MISSING)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    if not args.no_execute:
        from nbclient import NotebookClient

        with tempfile.TemporaryDirectory() as folder:
            run_in = {"metadata": {"path": folder}}
            client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources=run_in)
            client.execute()
        if args.save_notebook:
            nbformat.write(notebook, NOTEBOOK)
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "notebook.html"
        source.write_text(page(notebook), encoding="utf-8")
        with sync_playwright() as playwright:
            browser = launch(playwright)
            view = browser.new_page(viewport={"width": WIDTH, "height": 900})
            outside: list[str] = []
            view.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(("file:", "data:"))
                    else (outside.append(route.request.url), route.abort())
                ),
            )
            view.goto(source.as_uri())
            staged = Path(tempfile.mkstemp(dir=out.parent, prefix=".tmp-", suffix=".png")[1])
            view.screenshot(path=str(staged), full_page=True)
            browser.close()
    staged.chmod(0o644)
    os.replace(staged, out)
    print(out)
    if outside:
        print("fetched from outside (blocked):", *outside, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
