"""Every Python example of the README runs as written (in order, sharing names)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
LOOPS = README.parent / "docs" / "loops.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    names: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), names)  # noqa: S102 - the README's own code
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
    assertions), and one section per row of its table (which the README repeats)."""
    text = LOOPS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    names: dict = {}
    for block in blocks:
        exec(compile(block, str(LOOPS), "exec"), names)  # noqa: S102 - the page's own code
    rows = re.findall(r"^\| \[([^\]]+)\]\(#([a-z0-9-]+)\)", text, flags=re.M)
    headings = {
        h.lower().replace(" ", "-").replace(",", "")
        for h in re.findall(r"^## (.+)$", text, flags=re.M)
    }
    assert len(rows) == 13 and {anchor for _, anchor in rows} <= headings
    assert len(blocks) == len(rows) + 1  # the shared helpers, then one block per row
    readme = README.read_text()
    for name, anchor in rows:  # the README's table links every row here
        assert f"docs/loops.md#{anchor}" in readme, name
