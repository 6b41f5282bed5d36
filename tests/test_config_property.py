"""Any TOML config and flags: `ganstep train` trains 2 steps or exits 1 with one
`ganstep: error:` line, never a traceback."""

from __future__ import annotations

import itertools
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ganstep.cli import TRAIN_FLAGS, main

NAMES = {
    "data": ["grid", "ring", "digits", "POINTS", "nowhere/folder", "cifar"],
    "model": ["mlp", "dcgan", "began", "gpt"],
    "objective": ["ns", "minimax", "lsgan", "hinge", "wgan_gp", "began", "softmax", "wgan"],
    "schedule": ["d_first", "g_first", "simultaneous", "mode2"],
    "precision": ["fp32", "bf16", "fp16", "fp8"],
    "lr_decay": ["none", "linear", "cosine"],
    "device": ["auto", "cpu", "cuda", "tpu"],
    "augment": ["none", "diffaugment", "ada", "flip", "translation,cutout"],
    "compile": ["none", "nonsense"],  # a real compile takes minutes: not in a test
}
INTS = ["z_dim", "width", "seed", "batch_size", "eval_samples", "keep", "log_every", "r1_every",
        "accumulate", "feature_steps", "eval_every", "sample_every", "ckpt_every",
        "limit", "pack"]  # fmt: skip
FLOATS = ["r1", "lr_g", "lr_d", "beta1", "beta2", "ema", "real_label", "fake_label"]
SMALL_INT = st.one_of(st.integers(2, 24), st.integers(-2, 24))
SMALL_FLOAT = st.sampled_from([0.0, 1e-4, 5e-4, 0.1, 0.5, 0.99, 1.0, -1.0, math.inf, math.nan])
WRONG = st.one_of(st.booleans(), st.text(max_size=3), st.floats(-2, 2), st.lists(SMALL_INT))


def toml_value(key: str):
    if key in NAMES:
        right = st.sampled_from(NAMES[key])
    elif key in INTS:
        right = SMALL_INT
    elif key in FLOATS:
        right = SMALL_FLOAT
    else:  # fused
        right = st.booleans()
    return st.one_of(right, right, right, right, WRONG)  # mostly the right type


def flag_value(key: str):
    if key in NAMES:
        return st.sampled_from(NAMES[key])
    if key in INTS:
        return SMALL_INT
    return SMALL_FLOAT


KEYS = [*NAMES, *INTS, *FLOATS, "fused"]
configs = st.dictionaries(st.sampled_from(KEYS), st.none(), max_size=4).flatmap(
    lambda d: st.fixed_dictionaries({k: toml_value(k) for k in d})
)
FLAG_KEYS = [k for k in KEYS if k in TRAIN_FLAGS and k != "fused"]
flags = st.dictionaries(st.sampled_from(FLAG_KEYS), st.none(), max_size=3).flatmap(
    lambda d: st.fixed_dictionaries({k: flag_value(k) for k in d})
)
fused_flag = st.sampled_from([False, False, False, True])


def toml_text(values: dict) -> str:
    def literal(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v == math.inf else repr(v))
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(literal(x) for x in v) + "]"
        return repr(v)

    return "".join(f"{k} = {literal(v)}\n" for k, v in values.items())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("property")
    np.save(folder / "points.npy", np.random.default_rng(0).normal(size=(40, 3)))
    return folder


@given(config=configs, given_flags=flags, fused=fused_flag)
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_config_trains_two_steps_or_fails_in_one_line(
    workdir, capsys, monkeypatch, config, given_flags, fused
):
    monkeypatch.setenv("GANSTEP_CACHE", str(workdir / "cache"))
    n = next(COUNTER)
    out = workdir / f"run{n}"
    points = str(workdir / "points.npy")
    config = {k: (points if v == "POINTS" else v) for k, v in config.items()}
    given_flags = {k: (points if v == "POINTS" else v) for k, v in given_flags.items()}
    toml = workdir / f"config{n}.toml"
    toml.write_text(toml_text(config))
    try:
        assert tomllib.loads(toml.read_text()) == config or any(
            isinstance(v, float) and math.isnan(v) for v in config.values()
        )
    except tomllib.TOMLDecodeError:
        pass  # a string hypothesis made that TOML cannot hold: the run must say so
    argv = ["train", "--config", str(toml), "--steps", "2", "--out", str(out), "--no-progress"]
    for key, value in given_flags.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    if fused:
        argv.append("--fused")

    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    event(f"exit {code}")  # --hypothesis-show-statistics: how many trained

    assert "Traceback" not in err
    lines = err.splitlines()
    # the one line that is neither: the first run on a dataset says it trains its metric
    # network (whichever example hypothesis draws first meets an empty cache)
    said = ("ganstep: error: ", "ganstep: warning: ", "ganstep: training a metric network once")
    assert all(line.startswith(said) for line in lines), err
    if code == 0:
        assert (out / "checkpoints" / "step_00000002.pt").exists()
        assert tomllib.loads((out / "config.toml").read_text())["steps"] == 2
        assert not [line for line in lines if line.startswith("ganstep: error: ")]
    else:
        assert code == 1, err
        assert len([line for line in lines if line.startswith("ganstep: error: ")]) == 1, err


COUNTER = itertools.count()
