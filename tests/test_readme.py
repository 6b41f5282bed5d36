"""Every Python example of the README runs as written (in order, sharing names)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


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
    assert names["gan"].trainer.global_step == names["gan"].iterations == 8
    assert names["accelerated"].iteration == 8
