"""The README and the docs site: every Python block runs as written, and the site builds
with ``mkdocs build --strict`` (no broken link, no docstring the API page cannot read)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LOOPS = DOCS / "loops.md"


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def site_pages() -> list[Path]:
    """The site's pages in the order of its navigation (mkdocs.yml)."""
    nav = re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    return [DOCS / page for page in nav]


def test_readme_example_runs():
    blocks = python_blocks(README)
    assert len(blocks) == 1
    names: dict = {}
    exec(compile(blocks[0], str(README), "exec"), names)  # noqa: S102 - the README's own code
    assert set(names["losses"]) == {"loss_d", "loss_g"}
    assert names["step"].iteration == 100


def test_readme_is_short_and_maps_every_page():
    text = README.read_text()
    assert len(text.splitlines()) < 250
    pages = {p.relative_to(ROOT).as_posix() for p in site_pages()} - {"docs/index.md"}
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)\)", text))
    assert pages == linked


def test_guide_python_blocks_run():
    """The guide's pages, in the site's order, sharing names as a reader's session would
    (docs/loops.md has its own test below)."""
    names: dict = {}
    ran = 0
    for page in site_pages():
        if page == LOOPS:
            continue
        for block in python_blocks(page):
            exec(compile(block, str(page), "exec"), names)  # noqa: S102 - the docs' own code
            ran += 1
    assert ran >= 10
    assert set(names["losses"]) == {"loss_d", "loss_g"}
    assert names["report"].order == "d_first" and names["report"].wasted_flops == 0
    # the GAN families' examples
    assert set(names["ra_losses"]) == {"loss_d", "loss_g"}
    assert set(names["wgan_losses"]) == {"loss_d"}  # the 5th iteration: D only
    assert {"loss_info", "cat", "con"} <= set(names["info_losses"])
    assert set(names["sg2_losses"]) == {"augment_p", "gp", "loss_d", "loss_g", "pl"}
    assert {"loss_g", "loss_d", "cycle_a", "idt_b"} <= set(names["cycle_losses"])
    # inside Lightning and Accelerate
    assert names["trainer"].global_step == names["trainer"].lightning_module.iterations == 8
    assert names["accelerated"].iteration == 8


def test_docs_public_loops_run_and_equal_their_sources():
    """docs/loops.md: each public loop and its Step, equal to 1e-12 (the page's own
    assertions), and one section per row of its table (which the update orders' page
    repeats)."""
    text = LOOPS.read_text()
    blocks = python_blocks(LOOPS)
    names: dict = {}
    for block in blocks:
        exec(compile(block, str(LOOPS), "exec"), names)  # noqa: S102 - the page's own code
    rows = re.findall(r"^\| \[([^\]]+)\]\(#([a-z0-9-]+)\)", text, flags=re.M)
    headings = {
        h.lower().replace(" ", "-").replace(",", "")
        for h in re.findall(r"^## (.+)$", text, flags=re.M)
    }
    assert len(rows) == 41 and {anchor for _, anchor in rows} <= headings
    assert len(blocks) == len(rows) + 1  # the shared helpers, then one block per row
    orders = (DOCS / "guide" / "orders.md").read_text()
    for name, anchor in rows:  # the orders page's table links every row here
        assert f"../loops.md#{anchor}" in orders, name


def test_site_builds_strict(tmp_path):
    """``mkdocs build --strict``: a broken link, a missing page or an API entry mkdocstrings
    cannot render fails the build (and this test)."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text()
    # Step's docstring, its arguments read as a table of parameters
    assert "One full GAN training iteration per call" in api
    assert api.count("Parameters:") >= 5 and "ResumableLoader" in api
