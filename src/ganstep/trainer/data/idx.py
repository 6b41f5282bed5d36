"""MNIST and Fashion-MNIST: an IDX reader and a downloader that verifies checksums.

Files come from the official locations into a cache folder, or from a local
folder (``data_dir``) holding the official files; either way each file's md5 and
sha256 must match before it is read.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import struct
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

# name -> (md5, sha256) of the official files.
CHECKSUMS = {
    "mnist": {
        "train-images-idx3-ubyte.gz": (
            "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        ),
        "train-labels-idx1-ubyte.gz": (
            "d53e105ee54ea40749a09fcbcd1e9432",
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        ),
        "t10k-images-idx3-ubyte.gz": (
            "9fb629c4189551a2d022fa330f9573f3",
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        ),
        "t10k-labels-idx1-ubyte.gz": (
            "ec29112dd5afa0611ce80d1b7f02629c",
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        ),
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": (
            "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        ),
        "train-labels-idx1-ubyte.gz": (
            "25c81989df183df01b3e8a0aad5dffbe",
            "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        ),
        "t10k-images-idx3-ubyte.gz": (
            "bef4ecab320f06d8554ea6380940ec79",
            "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        ),
        "t10k-labels-idx1-ubyte.gz": (
            "bb300cfdad3c16e7a12a480ee83cd310",
            "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
        ),
    },
}

MIRRORS = {
    "mnist": [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ],
    "fashion-mnist": ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"],
}

IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


class DataError(ValueError):
    """Missing, corrupted or unusable data, with a message that says which and why."""


def cache_dir() -> Path:
    """Where downloads go: ``$GANSTEP_CACHE`` or ``~/.cache/ganstep``."""
    return Path(os.environ.get("GANSTEP_CACHE", Path.home() / ".cache" / "ganstep"))


def read_idx(path: str | os.PathLike, magic: int) -> np.ndarray:
    """Read an IDX file (gzipped or not) of unsigned bytes with the expected ``magic``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read IDX file ({e})") from e
    if len(data) < 4:
        raise DataError(f"{path}: truncated IDX file ({len(data)} bytes, no header)")
    (found,) = struct.unpack(">i", data[:4])
    if found != magic:
        raise DataError(f"{path}: bad IDX magic {found}, expected {magic}")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{path}: truncated IDX header")
    dims = struct.unpack(f">{ndim}i", data[4:header])
    expected = int(np.prod(dims))
    if len(data) - header != expected:
        raise DataError(
            f"{path}: truncated IDX file: header says {dims} = {expected} bytes of data, "
            f"found {len(data) - header}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def verify(path: Path, md5: str, sha256: str, fix: str = "delete it to download again") -> None:
    """Raise :class:`DataError` unless ``path`` has the given md5 and sha256; ``fix``
    says what the user can do about it."""
    h_md5, h_sha = hashlib.md5(), hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h_md5.update(chunk)
            h_sha.update(chunk)
    if h_md5.hexdigest() != md5 or h_sha.hexdigest() != sha256:
        raise DataError(
            f"{path}: checksum mismatch (md5 {h_md5.hexdigest()}, expected {md5}); "
            f"the file is corrupted or not the official one: {fix}"
        )


def _download(urls: list[str], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".download-")
                with os.fdopen(fd, "wb") as f:
                    shutil.copyfileobj(r, f)
            os.replace(tmp, dest)
            return
        except OSError as e:
            errors.append(f"{url}: {e}")
    raise DataError(f"could not download {dest.name}:\n  " + "\n  ".join(errors))


def locate(name: str, data_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """Paths of the verified official files of ``name``, downloading into the cache if needed.

    With ``data_dir``, files are taken from ``data_dir`` or ``data_dir/name`` and never
    downloaded.
    """
    if name not in CHECKSUMS:
        raise DataError(f"unknown IDX dataset {name!r}; choose one of: {', '.join(CHECKSUMS)}")
    paths = {}
    fix = "delete it to download again"
    if data_dir is not None:
        fix = "replace it with the official file (files in --data-dir are never downloaded)"
    for filename, (md5, sha256) in CHECKSUMS[name].items():
        if data_dir is not None:
            candidates = [Path(data_dir) / filename, Path(data_dir) / name / filename]
            path = next((p for p in candidates if p.exists()), None)
            if path is None:
                raise DataError(
                    f"{filename} not found in {data_dir} or {Path(data_dir) / name}; "
                    "--data-dir must hold the official files"
                )
        else:
            path = cache_dir() / name / filename
            if not path.exists():
                _download([m + filename for m in MIRRORS[name]], path)
        verify(path, md5, sha256, fix)
        paths[filename] = path
    return paths


def load_idx(name: str, data_dir=None) -> dict[str, np.ndarray]:
    """Train and test images (uint8, N x 28 x 28) and labels of MNIST or Fashion-MNIST."""
    paths = locate(name, data_dir)
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(paths[f"{prefix}-images-idx3-ubyte.gz"], IMAGE_MAGIC)
        labels = read_idx(paths[f"{prefix}-labels-idx1-ubyte.gz"], LABEL_MAGIC)
        if len(images) != len(labels):
            raise DataError(f"{name} {split}: {len(images)} images but {len(labels)} labels")
        out[f"{split}_images"], out[f"{split}_labels"] = images, labels
    return out
