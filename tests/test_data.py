"""Datasets and metrics: IDX parsing, verified downloads, folders, arrays, toy metrics, FID/KID."""

from __future__ import annotations

import gzip
import math
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SHARED_DATA, needs_shared_data
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from ganstep.trainer.data import DataError, load_dataset
from ganstep.trainer.data import idx as idx_module
from ganstep.trainer.data.idx import IMAGE_MAGIC, LABEL_MAGIC, locate, read_idx
from ganstep.trainer.metrics import fid, kid, toy_metrics


def write_idx(path: Path, array: np.ndarray, magic: int, cut: int = 0) -> None:
    payload = struct.pack(">i", magic) + struct.pack(f">{array.ndim}i", *array.shape)
    payload += array.astype(np.uint8).tobytes()
    with gzip.open(path, "wb") as f:
        f.write(payload[: len(payload) - cut])


def test_read_idx_round_trip(tmp_path):
    images = np.arange(2 * 3 * 4).reshape(2, 3, 4).astype(np.uint8)
    write_idx(tmp_path / "x.gz", images, IMAGE_MAGIC)
    assert np.array_equal(read_idx(tmp_path / "x.gz", IMAGE_MAGIC), images)


def test_bad_idx_magic(tmp_path):
    write_idx(tmp_path / "x.gz", np.zeros((2, 3)), LABEL_MAGIC + 0x100)
    with pytest.raises(DataError, match="bad IDX magic 2305, expected 2049"):
        read_idx(tmp_path / "x.gz", LABEL_MAGIC)


@given(st.integers(1, 40))
@settings(max_examples=15, deadline=None)
def test_truncated_idx(cut):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.gz"
        write_idx(path, np.ones((3, 4, 4)), IMAGE_MAGIC, cut=cut)
        with pytest.raises(DataError, match="truncated IDX"):
            read_idx(path, IMAGE_MAGIC)


def test_not_gzip_is_a_clear_error(tmp_path):
    (tmp_path / "x.gz").write_bytes(b"plain bytes")
    with pytest.raises(DataError, match="cannot read IDX file"):
        read_idx(tmp_path / "x.gz", IMAGE_MAGIC)


@needs_shared_data
def test_mnist_from_data_dir_is_verified_and_read():
    ds = load_dataset("mnist", SHARED_DATA)
    assert ds.train.shape == (60000, 1, 28, 28) and ds.test.shape == (10000, 1, 28, 28)
    assert ds.train.min() == -1 and ds.train.max() == 1


@needs_shared_data
def test_checksum_mismatch_is_refused(tmp_path):
    local = tmp_path / "fashion-mnist"
    shutil.copytree(SHARED_DATA / "fashion-mnist", local)
    target = local / "t10k-labels-idx1-ubyte.gz"
    target.chmod(0o644)
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz: checksum mismatch") as e:
        load_dataset("fashion-mnist", tmp_path)
    # --data-dir never downloads: the fix is to replace the file, not to delete it
    assert "replace it with the official file" in str(e.value)
    assert "download again" not in str(e.value)


def test_missing_files_in_data_dir(tmp_path):
    with pytest.raises(DataError, match="train-images-idx3-ubyte.gz not found in"):
        load_dataset("mnist", tmp_path)


@needs_shared_data
def test_download_goes_to_the_cache_and_is_verified(tmp_path, monkeypatch):
    """The downloader, offline: mirrors pointed at file:// copies of the official files."""
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(idx_module.MIRRORS, "mnist", [
        (tmp_path / "dead").as_uri() + "/", (SHARED_DATA / "mnist").as_uri() + "/"])  # fmt: skip
    paths = locate("mnist")
    assert all(p.parent == tmp_path / "cache" / "mnist" for p in paths.values())
    assert not list((tmp_path / "cache" / "mnist").glob(".download-*"))
    # a corrupted cached file is detected on the next use
    victim = paths["t10k-labels-idx1-ubyte.gz"]
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(DataError, match="checksum mismatch"):
        locate("mnist")


def test_download_failure_names_every_mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("GANSTEP_CACHE", str(tmp_path))
    monkeypatch.setitem(idx_module.MIRRORS, "mnist", [(tmp_path / "nowhere").as_uri() + "/"])
    with pytest.raises(DataError, match="could not download train-images-idx3-ubyte.gz"):
        locate("mnist")


def test_image_folder_grayscale_and_rgb(tmp_path):
    for mode, color in (("L", 200), ("RGB", (10, 20, 30))):
        folder = tmp_path / mode
        folder.mkdir()
        for i in range(3):  # not all alike: identical images are refused (nothing to learn)
            shade = color + i if mode == "L" else (color[0] + i, *color[1:])
            Image.new(mode, (12, 10), shade).save(folder / f"{i}.png")
        ds = load_dataset(str(folder))
        assert ds.train.shape == (3, 1 if mode == "L" else 3, 10, 12)
        raw = ds.to_raw(ds.train)
        assert np.allclose(raw[0, :, 0, 0], np.atleast_1d(color), atol=1e-3)


def test_sixteen_bit_grayscale_keeps_its_range(tmp_path):
    values = [np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000 + 7 * i for i in range(3)]
    for i, v in enumerate(values):
        Image.fromarray(v).save(tmp_path / f"{i}.png")  # a 16-bit PNG (mode I;16)
    with Image.open(tmp_path / "0.png") as im:
        assert im.mode == "I;16"
    ds = load_dataset(str(tmp_path))
    assert ds.raw_range == (0.0, 65535.0)
    expected = torch.from_numpy(np.stack(values)[:, None].astype(np.float32) / 65535 * 2 - 1)
    assert torch.allclose(ds.train, expected, atol=1e-6)
    assert np.allclose(ds.to_raw(ds.train), np.stack(values)[:, None], atol=0.02)
    # not clipped to near-white, as an 8-bit conversion would
    assert ds.train.min() == -1 and 0.9 < ds.train.max() <= 1 and ds.train.median() < 0


def test_mixed_bit_depths_single_image_and_missing_folder_are_named(tmp_path):
    (tmp_path / "mixed").mkdir()
    Image.fromarray(np.full((4, 4), 40000, np.uint16)).save(tmp_path / "mixed" / "a.png")
    Image.new("L", (4, 4), 9).save(tmp_path / "mixed" / "b.png")
    with pytest.raises(DataError, match=r"mixed bit depths \(a.png has more than 8 bits"):
        load_dataset(str(tmp_path / "mixed"))
    (tmp_path / "one").mkdir()
    Image.new("L", (4, 4), 9).save(tmp_path / "one" / "a.png")
    with pytest.raises(DataError, match="1 image; training needs at least 2"):
        load_dataset(str(tmp_path / "one"))
    with pytest.raises(DataError, match="no such folder"):
        load_dataset(str(tmp_path / "absent"))
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(DataError, match="not a folder of PNG/JPG images nor a .npy file"):
        load_dataset(str(tmp_path / "notes.txt"))


def test_class_subfolders_label_an_image_folder(tmp_path):
    for k, name in enumerate(["cats", "dogs"]):
        (tmp_path / name).mkdir()
        for i in range(15):
            Image.new("L", (6, 6), 20 + 100 * k).save(tmp_path / name / f"{i}.png")
    ds = load_dataset(str(tmp_path))
    assert ds.classes == ("cats", "dogs") and len(ds.labels) + len(ds.test_labels) == 30
    assert set(ds.test_labels.tolist()) == {0, 1}  # shuffled before the split
    for x, y in zip(ds.train, ds.labels, strict=True):  # each image keeps its own label
        assert (x.mean() > -0.5) == (y == 1)
    x, y = ds.labelled_batch(8, torch.Generator().manual_seed(0))
    assert x.shape == (8, 1, 6, 6) and y.dtype == torch.int64


def test_unreadable_image_and_empty_folder(tmp_path):
    with pytest.raises(DataError, match="no PNG or JPG images"):
        load_dataset(str(tmp_path))
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="bad.png: not a readable image"):
        load_dataset(str(tmp_path))


@given(st.sampled_from([(50, 3), (30, 5, 5), (30, 1, 6, 6), (30, 6, 6, 3)]))
@settings(max_examples=8, deadline=None)
def test_npy_arrays_of_points_and_images(shape):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "data.npy"
        array = np.random.default_rng(0).uniform(-3, 7, size=shape).astype(np.float32)
        np.save(path, array)
        ds = load_dataset(str(path))
        if len(shape) == 2:
            assert ds.kind == "points" and ds.train.shape[1:] == (3,)
            assert abs(float(torch.cat([ds.train, ds.test]).std(0).mean()) - 1) < 0.05
            assert np.allclose(ds.to_raw(ds.train), array[: len(ds.train)], atol=1e-4)
        else:
            assert ds.kind == "images" and ds.train.min() >= -1 and ds.train.max() <= 1
            raw = ds.to_raw(ds.train)
            assert raw.min() >= array.min() - 1e-4 and raw.max() <= array.max() + 1e-4


@pytest.mark.parametrize(
    "array, message",
    [(np.array([1.0, np.nan, 2.0, 3.0]).reshape(2, 2), "NaN or infinite"),
     (np.zeros(5), "at least 2 samples"),
     (np.zeros((4, 2, 5, 5)), "1 or 3 channels")],
)  # fmt: skip
def test_bad_npy_arrays(tmp_path, array, message):
    np.save(tmp_path / "x.npy", array)
    with pytest.raises(DataError, match=message):
        load_dataset(str(tmp_path / "x.npy"))


def test_digits_is_embedded_and_maps_back_to_its_values():
    ds = load_dataset("digits")
    assert ds.train.shape[1:] == (1, 8, 8) and len(ds.train) + len(ds.test) == 1797
    original = ds.to_raw(ds.train[:5])
    ds.fit(32)
    assert ds.train.shape[1:] == (1, 32, 32)
    assert np.abs(ds.to_raw(ds.train[:5]) - original).max() < 1e-5  # 4x blocks, averaged back


def test_toy_data_is_pacgans():
    gen = torch.Generator().manual_seed(0)
    grid, ring = load_dataset("grid"), load_dataset("ring")
    assert grid.modes.shape == (25, 2) and grid.std == 0.05
    assert torch.allclose(ring.modes.norm(dim=1), torch.ones(8)) and ring.std == 0.01
    x = grid.batch(20000, gen)
    assert abs(float((x - x.round()).std()) - 0.05) < 0.005


# -- metrics ----------------------------------------------------------------------------


def test_toy_metrics_on_exact_modes_and_on_collapse():
    grid = load_dataset("grid")
    perfect = grid.modes.repeat(100, 1)
    assert toy_metrics(perfect, grid.modes, grid.std) == {
        "modes": 25, "hq_fraction": 1.0, "reverse_kl": pytest.approx(0.0, abs=1e-12)}  # fmt: skip
    collapsed = grid.modes[:1].repeat(2500, 1)
    m = toy_metrics(collapsed, grid.modes, grid.std)
    assert m["modes"] == 1 and m["reverse_kl"] == pytest.approx(math.log(25))
    far = grid.modes + 0.16  # just beyond 3 sigma: counted in the histogram, not high quality
    m = toy_metrics(far, grid.modes, grid.std)
    assert m["modes"] == 0 and m["hq_fraction"] == 0.0 and m["reverse_kl"] == pytest.approx(0.0)


def test_fid_and_kid_separate_distributions():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2000, 8, generator=gen), torch.randn(2000, 8, generator=gen)
    shifted = b + 1.0
    assert fid(a, b) < 0.1 < 7.0 < fid(a, shifted) < 9.0  # ||mu||^2 = 8
    assert abs(kid(a, b)) < 0.01 < kid(a, shifted)
    with pytest.raises(ValueError, match="at least 2 samples"):
        kid(a[:1], b)
