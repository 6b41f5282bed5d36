"""Datasets: toy 2D mixtures, images (digits, MNIST, Fashion-MNIST, Stacked MNIST, a
folder), arrays.

Every dataset gives batches in the model's space (points as they are, images in
[-1, 1] at the model's size) and maps generated samples back to the data's own
values and size with :meth:`Dataset.to_raw`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ...engine.errors import GanstepWarning
from . import stacked
from .idx import CHECKSUMS, DataError, load_idx
from .toy import TOY, sample_mixture

NAMES = ("grid", "ring", "digits", "mnist", "fashion-mnist", "stacked-mnist")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
# Pillow modes of one channel deeper than 8 bits: 16-bit integers, 32-bit integers, floats.
SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")
DEEP_GRAY = (*SIXTEEN_BIT, "I", "F")
IDX_CLASSES = {
    "mnist": [str(k) for k in range(10)],
    "fashion-mnist": ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                      "sneaker", "bag", "ankle boot"],
}  # fmt: skip
MIN_IMAGES = 2  # FID/KID compare the spread of the real features: one image has none
MIN_SIDE = 4  # the smallest image side the metric networks' two poolings take


@dataclass
class Dataset:
    """Training data and how to map between its values and the model's.

    ``kind`` is ``"points"`` (vectors, used as given) or ``"images"`` (N, C, H, W,
    mapped from ``raw_range`` to [-1, 1]). Toy mixtures have ``modes`` and ``std``
    and no fixed ``train`` tensor: batches are drawn fresh.
    """

    name: str
    kind: str
    train: Tensor | None
    test: Tensor | None = None
    modes: Tensor | None = None
    std: float | None = None
    raw_range: tuple[float, float] = (-1.0, 1.0)
    shift: Tensor | None = None  # points given as data: standardised, x = (raw - shift) / scale
    scale: Tensor | None = None
    native_hw: tuple[int, int] | None = None
    model_hw: tuple[int, int] | None = field(default=None)
    # Class labels (int64, one per sample) and class names, for conditional training.
    labels: Tensor | None = None
    test_labels: Tensor | None = None
    classes: tuple[str, ...] | None = None

    @property
    def sample_shape(self) -> tuple[int, ...]:
        if self.modes is not None:
            return (self.modes.shape[1],)
        return tuple(self.train.shape[1:])

    @property
    def checksum(self) -> str:
        """A digest of the training data, to key caches (the FID feature extractor)."""
        h = hashlib.sha256(self.name.encode())
        if self.train is not None:
            h.update(str(tuple(self.train.shape)).encode())
            h.update(self.train.numpy().tobytes())
        return h.hexdigest()[:16]

    def batch(self, n: int, generator: torch.Generator) -> Tensor:
        """n training samples, drawn with ``generator`` (uniformly, with replacement)."""
        if self.modes is not None:
            return sample_mixture(self.modes, self.std, n, generator)
        index = torch.randint(len(self.train), (n,), generator=generator, device=self.train.device)
        return self.train[index]

    def labelled_batch(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """n training samples and their class labels, drawn as :meth:`batch` draws."""
        if self.labels is None:
            raise DataError(f"{self.name} has no class labels: it cannot train conditionally")
        index = torch.randint(len(self.train), (n,), generator=generator, device=self.train.device)
        return self.train[index], self.labels[index]

    def fit(self, size: int | None) -> None:
        """Bring images to ``size`` x ``size``: pad by up to 8 pixels (28 -> 32), else resize.
        ``None`` keeps the native size."""
        if self.kind != "images" or size is None or self.native_hw == (size, size):
            self.model_hw = self.native_hw
            return
        self.model_hw = (size, size)
        self.train = _to_size(self.train, self.native_hw, size)
        if self.test is not None:
            self.test = _to_size(self.test, self.native_hw, size)

    def subset(self, limit: int) -> Dataset:
        """The same data with ``limit`` training samples (and their labels), a fixed
        random subset: the same for every run and seed."""
        if self.train is None:
            raise DataError(f"{self.name} draws fresh samples: a limit applies to stored data")
        if limit > len(self.train):
            raise DataError(
                f"limit {limit} is more than the {len(self.train)} training samples of {self.name}"
            )
        pick = torch.randperm(len(self.train), generator=torch.Generator().manual_seed(0))
        pick = pick[:limit].sort().values
        labels = None if self.labels is None else self.labels[pick]
        return dataclasses.replace(self, train=self.train[pick], labels=labels)

    def training_bytes(self) -> int:
        """The size of what batches are drawn from (samples and labels)."""
        return sum(t.numel() * t.element_size() for t in (self.train, self.labels, self.modes)
                   if t is not None)  # fmt: skip

    def on(self, device: torch.device) -> Dataset:
        """The same data with what batches are drawn from (samples, labels, a mixture's
        modes) on ``device``, so that a draw there needs no copy from the host."""

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(device)

        return dataclasses.replace(self, train=move(self.train), labels=move(self.labels),
                                   modes=move(self.modes))  # fmt: skip

    def to_raw(self, x: Tensor) -> np.ndarray:
        """Generated samples in the data's own values and size, as a numpy array."""
        x = x.detach().float().cpu()
        if self.kind == "images":
            if self.model_hw != self.native_hw:
                x = _from_size(x, self.native_hw)
            lo, hi = self.raw_range
            x = (x.clamp(-1, 1) + 1) / 2 * (hi - lo) + lo
        elif self.scale is not None:
            x = x * self.scale + self.shift
        return x.numpy()


def _pad(native: tuple[int, int], size: int) -> tuple[int, int, int, int] | None:
    dh, dw = size - native[0], size - native[1]
    if 0 <= dh <= 8 and 0 <= dw <= 8 and dh % 2 == 0 and dw % 2 == 0:
        return (dw // 2, dw // 2, dh // 2, dh // 2)
    return None


def _to_size(x: Tensor, native: tuple[int, int], size: int) -> Tensor:
    pad = _pad(native, size)
    if pad is not None:
        return F.pad(x, pad, value=-1.0)
    if size % native[0] == 0 and size % native[1] == 0:  # 8 -> 32: blocks, undone exactly
        return F.interpolate(x, size=(size, size), mode="nearest")
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


def _from_size(x: Tensor, native: tuple[int, int]) -> Tensor:
    pad = _pad(native, x.shape[-1])
    if pad is not None:
        left, _, top, _ = pad
        return x[..., top : top + native[0], left : left + native[1]]
    if x.shape[-2] % native[0] == 0 and x.shape[-1] % native[1] == 0:
        return F.interpolate(x, size=native, mode="area")
    return F.interpolate(x, size=native, mode="bilinear", align_corners=False, antialias=True)


def _images(
    name: str, array: np.ndarray, raw_range, test: np.ndarray | None = None, labels=None
) -> Dataset:
    """Images (N, C, H, W) in ``raw_range`` -> a dataset in [-1, 1]. ``labels``:
    ``(train labels, test labels or None, class names)``, or None."""
    lo, hi = raw_range
    if min(array.shape[-2:]) < MIN_SIDE:
        h, w = array.shape[-2:]
        raise DataError(
            f"{name}: images of {h}x{w} pixels; ganstep needs at least {MIN_SIDE}x{MIN_SIDE} "
            "(its metric networks pool twice)"
        )
    if not hi > lo:
        raise DataError(f"{name}: all pixel values are equal ({lo}); nothing to learn")
    if not math.isfinite(float(hi) - float(lo)):  # near float64's limit: the span is inf
        raise DataError(
            f"{name}: values from {float(lo):.3g} to {float(hi):.3g}; their span overflows "
            "float64 (the mapping to [-1, 1] would make NaN pixels): rescale the data"
        )
    if np.ptp(array, axis=0).max() == 0:
        raise DataError(
            f"{name}: all {len(array)} training images are identical; there is no "
            "distribution to learn (and the metrics' real-vs-real floor would be 0)"
        )
    # float32 cannot hold the differences of values beyond about 1e38: map in float64
    wide = max(abs(lo), abs(hi)) > 1e30

    def norm(a):
        scaled = (a.astype(np.float64 if wide else np.float32) - lo) / (hi - lo) * 2 - 1
        return torch.from_numpy(scaled.astype(np.float32)).contiguous()

    return Dataset(
        name=name,
        kind="images",
        train=norm(array),
        test=None if test is None else norm(test),
        raw_range=(float(lo), float(hi)),
        native_hw=tuple(array.shape[2:]),
        labels=None if labels is None else torch.from_numpy(labels[0].astype(np.int64)),
        test_labels=None
        if labels is None or labels[1] is None
        else torch.from_numpy(labels[1].astype(np.int64)),
        classes=None if labels is None else tuple(labels[2]),
    )


def _split(array: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Hold out the last tenth as a test split (for the metrics' real-vs-real floor)."""
    if len(array) < 20:
        return array, None
    cut = len(array) - len(array) // 10
    return array[:cut], array[cut:]


def load_digits() -> Dataset:
    """scikit-learn's bundled 8x8 digits (1797 images, values 0..16): no download."""
    from sklearn.datasets import load_digits as sk_digits

    bunch = sk_digits()
    images = bunch.images.astype(np.float32)[:, None]  # (1797, 1, 8, 8)
    train, test = _split(images)
    y_train, y_test = _split(bunch.target)
    names = [str(k) for k in range(10)]
    return _images("digits", train, (0.0, 16.0), test, (y_train, y_test, names))


def load_stacked_mnist(
    data_dir: str | os.PathLike | None = None,
    train_size: int = stacked.TRAIN_SIZE,
    test_size: int = stacked.TEST_SIZE,
    seed: int = 0,
) -> Dataset:
    """Stacked MNIST (:mod:`ganstep.trainer.data.stacked`): 3 x 28 x 28 samples stacking three
    independently drawn MNIST digits, labelled 0-999; the same set for the same seed."""
    arrays = load_idx("mnist", data_dir)
    train, y_train = stacked.stack(arrays["train_images"], arrays["train_labels"], train_size,
                                   seed)  # fmt: skip
    test, y_test = stacked.stack(arrays["test_images"], arrays["test_labels"], test_size,
                                 seed + 1)  # fmt: skip
    return _images("stacked-mnist", train, (0.0, 255.0), test,
                   (y_train, y_test, stacked.class_names()))  # fmt: skip


def _image_files(path: Path) -> list[Path]:
    """The images of ``path`` (by suffix); a name with an image suffix that is not a
    regular file (a FIFO, a device, a folder) is refused: reading it could block."""
    found = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    odd = [p for p in found if not p.is_file() and not p.is_dir()]
    if odd and odd[0].is_symlink():  # exists() is False for a broken link and for a loop
        raise DataError(
            f"{odd[0]}: a symbolic link that leads to no file (broken, or a loop of links); "
            "remove it or point it at an image"
        )
    if odd:
        raise DataError(f"{odd[0]}: not a regular file (a pipe or a device); not an image")
    return [p for p in found if p.is_file()]


def _folder_files(path: Path) -> tuple[list[Path], dict[Path, int], list[str]]:
    """The images of a folder, or else of its class subfolders with each one's label. A
    folder with both is refused, naming the stray top-level images."""
    files = _image_files(path)
    label_of: dict[Path, int] = {}
    classes: list[str] = []
    subfolders = {p: _image_files(p) for p in sorted(path.iterdir()) if p.is_dir()}
    labelled = {p: found for p, found in subfolders.items() if found}
    if files and labelled:
        strays = ", ".join(f.name for f in files[:3]) + (" ..." if len(files) > 3 else "")
        raise DataError(
            f"{path}: {len(files)} image(s) beside {len(labelled)} class subfolder(s) of "
            f"images ({strays}): either every image sits in its class's subfolder, or the "
            "folder holds images only; move the stray ones"
        )
    if not files:
        for sub, found in labelled.items():
            classes.append(sub.name)
            label_of.update({f: len(classes) - 1 for f in found})
            files += found
    if not files:
        raise DataError(f"{path}: no PNG or JPG images in this folder")
    return files, label_of, classes


def _png_depth(path: Path) -> tuple[int, int] | None:
    """A PNG's (bit depth, colour type) from its header; None for anything else."""
    with open(path, "rb") as f:
        head = f.read(26)
    if len(head) < 26 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return head[24], head[25]


# PNG colour types with more than one channel: gray + alpha, RGB, RGBA
_PNG_MULTI_CHANNEL = {2: "RGB", 4: "gray + alpha", 6: "RGBA"}


def _check_alpha(path: Path, im) -> None:
    """The rule for transparency: an alpha channel that is opaque everywhere carries
    nothing and is dropped; one with a transparent pixel is refused, since the colour
    under it is not what the image shows."""
    bands = im.getbands()
    if "A" not in bands and "a" not in bands and "transparency" not in im.info:
        return
    alpha = im.getchannel("A") if "A" in bands else im.convert("RGBA").getchannel("A")
    if alpha.getextrema()[0] < 255:
        raise DataError(
            f"{path}: has transparent pixels (an alpha channel); ganstep trains on colour "
            "alone and would show D the colour hidden under them: flatten the images onto "
            "a background first (e.g. PIL's Image.alpha_composite) or remove the alpha"
        )


def _open_images(files: list[Path]) -> tuple[list, dict]:
    """The decoded images, and the first file of each size met. Refused: 16-bit colour
    PNGs (Pillow would read them as 8-bit), transparency (see :func:`_check_alpha`),
    decompression bombs."""
    from PIL import Image

    images, sizes = [], {}
    for f in files:
        depth = _png_depth(f) if f.suffix.lower() == ".png" else None
        if depth is not None and depth[0] == 16 and depth[1] in _PNG_MULTI_CHANNEL:
            raise DataError(
                f"{f}: a 16-bit {_PNG_MULTI_CHANNEL[depth[1]]} PNG, which Pillow reads as 8 "
                "bits per channel (losing the low byte): convert it to 8 bits, or give the "
                "pixels as a .npy array (N, H, W, 3) of uint16"
            )
        try:
            with Image.open(f) as im:
                im.load()
                _check_alpha(f, im)
                sizes.setdefault(im.size, f.name)
                images.append(im.copy())
        except Image.DecompressionBombError as e:
            raise DataError(f"{f}: refused as a possible decompression bomb ({e})") from None
        except OSError as e:
            raise DataError(f"{f}: not a readable image ({e})") from e
    return images, sizes


def load_folder(path: Path) -> Dataset:
    """All PNG/JPG images of a folder; they must share one size. A folder holding no
    images but one subfolder of images per class is labelled by subfolder name."""
    files, label_of, classes = _folder_files(path)
    images, sizes = _open_images(files)
    if len(images) < MIN_IMAGES:
        raise DataError(
            f"{path}: {len(images)} image; training needs at least {MIN_IMAGES} (the metrics "
            "compare the spread of real and generated images)"
        )
    if len(sizes) > 1:
        (s1, f1), (s2, f2) = list(sizes.items())[:2]
        raise DataError(
            f"{path}: images of mixed sizes ({f1} is {s1[0]}x{s1[1]}, {f2} is {s2[0]}x{s2[1]}); "
            "resize them to one size first"
        )
    deep = [f for f, im in zip(files, images, strict=True) if im.mode in DEEP_GRAY]
    if deep and len(deep) < len(images):
        shallow = next(f for f, im in zip(files, images, strict=True) if im.mode not in DEEP_GRAY)
        raise DataError(
            f"{path}: images of mixed bit depths ({deep[0].name} has more than 8 bits per pixel, "
            f"{shallow.name} has 8); convert them to one depth first"
        )
    array = _pixels(images, deep=bool(deep))
    if not deep:
        raw = (0.0, 255.0)
    elif all(im.mode in SIXTEEN_BIT for im in images):
        raw = (0.0, 65535.0)
    else:  # 32-bit integers or floats have no fixed range: use the data's own, as for .npy
        raw = (float(array.min()), float(array.max()))
    labels = None
    if classes:
        if len(classes) < 2:
            raise DataError(f"{path}: one class subfolder ({classes[0]}); classes need two")
        # files come class by class: a fixed shuffle puts every class in the test split
        order = np.random.default_rng(0).permutation(len(files))
        array, y = array[order], np.array([label_of[f] for f in files])[order]
        y_train, y_test = _split(y)
        labels = (y_train, y_test, classes)
    train, test = _split(array)
    return _images(path.name, train, raw, test, labels)


def _pixels(images: list, deep: bool) -> np.ndarray:
    """(N, C, H, W) pixel values of ``images``: 8-bit gray or RGB as uint8, deeper
    grayscale as float32 holding the values exactly as stored (16-bit stays 0..65535)."""
    if deep:
        return np.stack([np.asarray(im).astype(np.float32) for im in images])[:, None]
    gray = all(im.mode in ("L", "1", "LA") for im in images)
    array = np.stack([np.asarray(im.convert("L" if gray else "RGB")) for im in images])
    return array[:, None] if gray else array.transpose(0, 3, 1, 2)


def _check_npy_header(path: Path) -> None:
    """Refuse a ``.npy`` whose header promises more data than the file holds (a header
    claiming hundreds of GiB would make numpy try to allocate them)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)  # fmt: skip
            shape, _, dtype = read(f)
            start = f.tell()
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"{path}: not a readable .npy array ({e})") from e
    if dtype.hasobject:
        raise DataError(f"{path}: an array of Python objects; ganstep reads numbers only")
    needed = math.prod(shape) * dtype.itemsize
    held = path.stat().st_size - start
    if needed > held:
        raise DataError(
            f"{path}: its header says {shape} {dtype} ({needed:,} bytes) but the file holds "
            f"{held:,} bytes of data: truncated or damaged"
        )


def load_array(path: Path) -> Dataset:
    """A ``.npy`` array: (N, d) points, or images (N, H, W), (N, C, H, W) or (N, H, W, C)."""
    if not path.is_file():
        raise DataError(f"{path}: not a regular file (a pipe or a device); not a .npy array")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: an empty file (0 bytes), not a .npy array")
    _check_npy_header(path)
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"{path}: not a readable .npy array ({e})") from e
    if array.dtype.kind not in "uif" or array.ndim < 2 or len(array) < 2 or 0 in array.shape:
        raise DataError(
            f"{path}: need a numeric array of at least 2 samples with at least one value "
            f"each, shape (N, ...), got {array.dtype} {array.shape}"
        )
    if not np.isfinite(array).all():
        raise DataError(f"{path}: the array has NaN or infinite values")
    if array.ndim == 2 and array.shape[1] < 2:
        raise DataError(
            f"{path}: points of {array.shape[1]} coordinate; ganstep's points need at least 2 "
            "per sample, shape (N, d >= 2) (its metrics compare covariances, its report plots "
            "the first two)"
        )
    if array.ndim == 2 and np.ptp(array, axis=0).max() == 0:
        raise DataError(
            f"{path}: all {len(array)} points are identical; there is no distribution to "
            "learn (and the metrics' real-vs-real floor would be 0)"
        )
    if array.ndim == 2:
        data = torch.from_numpy(array.astype(np.float64))
        shift, scale = data.mean(0), data.std(0).clamp_min(1e-12)
        if not (torch.isfinite(shift).all() and torch.isfinite(scale).all()):
            raise DataError(
                f"{path}: values up to {np.abs(array).max():.3g} overflow their mean and "
                "spread in float64: rescale the data"
            )
        train, test = _split(((data - shift) / scale).float())
        return Dataset(name=path.stem, kind="points", train=train.contiguous(), test=test,
                       shift=shift.float(), scale=scale.float())  # fmt: skip
    if array.ndim == 3:
        array = array[:, None]
    elif array.ndim == 4 and array.shape[1] not in (1, 3) and array.shape[3] in (1, 3):
        array = array.transpose(0, 3, 1, 2)
    if array.ndim != 4 or array.shape[1] not in (1, 3):
        raise DataError(f"{path}: images must have 1 or 3 channels, got shape {array.shape}")
    raw = (0.0, 255.0) if array.dtype == np.uint8 else (float(array.min()), float(array.max()))
    train, test = _split(array)
    return _images(path.stem, train, raw, test)


def load_dataset(name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """A dataset by name (``grid``, ``ring``, ``digits``, ``mnist``, ``fashion-mnist``,
    ``stacked-mnist``) or by path (a folder of images or a ``.npy`` file)."""
    if name in NAMES and Path(name).is_dir():
        warnings.warn(
            f"{name!r} names the built-in dataset; your folder ./{name} is not read (give "
            f"--data ./{name} to train on it)",
            GanstepWarning,
            stacklevel=2,
        )
    if name in TOY:
        modes_fn, std = TOY[name]
        return Dataset(name=name, kind="points", train=None, modes=modes_fn(), std=std)
    if name == "digits":
        return load_digits()
    if name == "stacked-mnist":
        return load_stacked_mnist(data_dir)
    if name in CHECKSUMS:
        arrays = load_idx(name, data_dir)
        labels = (arrays["train_labels"], arrays["test_labels"], IDX_CLASSES[name])
        return _images(name, arrays["train_images"][:, None], (0.0, 255.0),
                       arrays["test_images"][:, None], labels)  # fmt: skip
    path = Path(name)
    if path.is_dir():
        return load_folder(path)
    if path.suffix == ".npy":
        if not path.exists():
            raise DataError(f"{path}: no such file")
        return load_array(path)
    if path.exists():
        raise DataError(f"{path}: not a folder of PNG/JPG images nor a .npy file")
    if "/" in name or os.sep in name:
        raise DataError(f"{path}: no such folder")
    raise DataError(
        f"unknown data {name!r}; choose one of: {', '.join(NAMES)}, a folder of PNG/JPG "
        "images, or a .npy file"
    )


__all__ = ["DataError", "Dataset", "NAMES", "load_dataset", "load_stacked_mnist"]
