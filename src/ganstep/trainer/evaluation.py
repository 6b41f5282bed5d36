"""Evaluation of a run's samples: toy mode coverage, FID/KID on a local feature
network, class accuracy and Stacked MNIST's modes; the metric networks are trained
once and cached."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import torch
from torch import Tensor, nn

from . import checkpoint
from .config import Config
from .data import Dataset, load_dataset
from .data.idx import DataError, cache_dir
from .metrics import FeatureExtractor, class_accuracy, fid, kid, toy_metrics, train_classifier
from .metrics import classes as classes_metric
from .metrics import stacked as stacked_metric
from .metrics.stacked import stacked_metrics


def check_metric_memory(data: Dataset) -> None:
    """Refuse images too large for the metric network to train on in this machine's
    memory (it trains at the images' size, 128 at a time), before it tries: two
    10000x10000 pictures asked torch for 25.6 GB and failed with that number alone."""
    _, channels, h, w = data.train.shape
    need = 128 * 32 * h * w * 4 * 3  # its first layer's activations, kept and their grads
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need > memory // 2:
        side = int((memory // 2 / (128 * 32 * 4 * 3)) ** 0.5)
        raise DataError(
            f"{data.name}: images of {h}x{w} pixels; ganstep's metric network trains at the "
            f"images' size and would need about {need / 2**30:,.0f} GiB there (this machine "
            f"has {memory / 2**30:.0f} GiB). Resize them to at most about {side}x{side} "
            "first (the models train at 64x64 at most)"
        )


class Evaluator:
    """Metrics of generated samples: toy mode coverage, or FID/KID against real features,
    and for a conditional run the class accuracy of samples made for known classes."""

    def __init__(self, data: Dataset, cfg: Config) -> None:
        self.data, self.n = data, cfg.eval_samples
        self.floor: dict[str, float] = {}
        self.classifier = self.digits = None
        if data.modes is not None:
            return
        if data.kind == "images":
            check_metric_memory(data)
            self.extractor = cached_extractor(data, cfg.feature_steps)
            self.embed = self.extractor.features
        else:
            self.embed = lambda x: x.double()
        gen = torch.Generator().manual_seed(0)
        pick = torch.randperm(len(data.train), generator=gen)[: self.n]
        self.real = self.embed(data.train[pick])
        if data.test is not None and len(data.test) >= 2:
            test = self.embed(data.test[: self.n])
            self.floor = {"fid_floor": fid(self.real, test), "kid_floor": kid(self.real, test)}
        if cfg.conditional:
            self.classifier = cached_classifier(data, cfg.feature_steps)
            images, labels = data.train, data.labels
            if data.test is not None and data.test_labels is not None:
                images, labels = data.test, data.test_labels
            accuracy = class_accuracy(self.classifier, images[: self.n], labels[: self.n])
            self.floor["class_accuracy_floor"] = accuracy

        if data.name == "stacked-mnist":
            self.digits, accuracy = cached_digit_classifier(cfg.data_dir, data.model_hw[0],
                                                            cfg.feature_steps)  # fmt: skip
            real = stacked_metrics(self.digits, data.train[pick])
            self.floor.update({"digit_accuracy": accuracy,
                               **{f"{k}_floor": v for k, v in real.items()}})  # fmt: skip

    def __call__(self, samples: Tensor, labels: Tensor | None = None) -> dict[str, float]:
        if self.data.modes is not None:
            return toy_metrics(samples, self.data.modes, self.data.std)
        samples = samples.float().cpu()
        fake = self.embed(samples)
        found = {"fid": fid(self.real, fake), "kid": kid(self.real, fake)}
        if self.digits is not None:
            found.update(stacked_metrics(self.digits, samples))
        if self.classifier is not None and labels is not None:
            found["class_accuracy"] = class_accuracy(self.classifier, samples, labels.cpu())
        return {**found, **self.floor}


# fit(tick) trains a metric network, calling tick() after each of its steps
Fit = Callable[[Callable[[], object]], nn.Module]


def _cached_net(name: str, make: Callable[[], nn.Module], fit: Fit, steps: int) -> nn.Module:
    """A metric network, trained once (``steps`` steps of ``fit``) and cached under
    ``name``. Runs started together on a fresh machine train it once: the first takes
    the cache's lock for ``name`` and trains, the others wait for it and load."""
    path = cache_dir() / "features" / f"{name}.pt"
    net = _load(make(), path)
    if net is not None:
        return net
    with _training_lock(path):
        net = _load(make(), path)  # another process may have trained it meanwhile
        if net is not None:
            return net
        # the one long piece of work before the first step: say what it is
        print(f"ganstep: training a metric network once ({name}); cached in {path.parent}",
              file=sys.stderr)  # fmt: skip
        from tqdm import tqdm

        # disable=None: a bar on a terminal only (a log file gets the line above alone)
        with tqdm(total=steps, desc="metric network", unit="step", file=sys.stderr,
                  disable=None, leave=False) as bar:  # fmt: skip
            net = fit(bar.update)
        checkpoint.atomic_save(net.state_dict(), path)
    return net


def _load(net: nn.Module, path: Path) -> nn.Module | None:
    """``net`` with the weights saved at ``path``, or None where there are none to use."""
    if not path.exists():
        return None
    try:
        net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception:  # stale, damaged or not ours (a pickle weights_only refuses):
        return None  # train again and overwrite it
    return net.eval()


@contextlib.contextmanager
def _training_lock(path: Path) -> Iterator[None]:
    """Hold the cache's lock for the network at ``path`` (waiting, and saying so, while
    another process holds it). A cache that cannot be written takes no lock: each run
    then trains its own, as before."""
    lock = path.with_suffix(".lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"ganstep: another process is training the metric network {path.stem}; "
                  "waiting for it", file=sys.stderr)  # fmt: skip
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def cached_extractor(data: Dataset, steps: int) -> FeatureExtractor:
    """The feature extractor of ``data``, trained once and cached by a data checksum."""
    key = f"{data.checksum}-{data.model_hw[0]}px-v{FeatureExtractor.VERSION}-s{steps}"
    return _cached_net(key, lambda: FeatureExtractor(data.train.shape[1]),
                       lambda tick: FeatureExtractor.train_on(data.train, steps, tick=tick),
                       steps)  # fmt: skip


def cached_classifier(data: Dataset, steps: int) -> FeatureExtractor:
    """The class_accuracy classifier of labelled ``data``, trained once and cached."""
    classes = len(data.classes)
    key = f"classes-{data.checksum}-{data.model_hw[0]}px-v{classes_metric.VERSION}-s{steps}"
    channels = data.train.shape[1]

    def fit(tick: Callable[[], object]) -> FeatureExtractor:  # more steps than rotations
        return train_classifier(data.train, data.labels, classes, 3 * steps, tick=tick)

    return _cached_net(key, lambda: FeatureExtractor(channels, outputs=classes), fit, 3 * steps)


def cached_digit_classifier(
    data_dir: str | None, size: int, feature_steps: int
) -> tuple[FeatureExtractor, float]:
    """Stacked MNIST's digit classifier at ``size`` pixels, with its accuracy on MNIST's
    test digits: at the default settings the one shipped in the package
    (``metrics.stacked.SHIPPED``: the same ruler on every machine), otherwise one
    trained once on MNIST's training digits and cached."""

    @functools.cache
    def mnist() -> Dataset:  # read (seconds) only to train the classifier or measure it
        digits = load_dataset("mnist", data_dir)
        digits.fit(size)
        return digits

    steps = stacked_metric.STEPS_PER_FEATURE_STEP * feature_steps
    key = f"digits-mnist-{size}px-v{stacked_metric.VERSION}-s{steps}"
    if key in stacked_metric.SHIPPED:
        net = FeatureExtractor(1, outputs=10)
        weights = io.BytesIO(shipped_digit_classifier(key))
        net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
        net.eval()
        digest = stacked_metric.SHIPPED[key]
    else:

        def fit(tick: Callable[[], object]) -> FeatureExtractor:
            digits = mnist()
            return stacked_metric.train_digit_classifier(digits.train, digits.labels, steps, tick)

        net = _cached_net(key, lambda: FeatureExtractor(1, outputs=10), fit, steps)
        digest = _sha256((cache_dir() / "features" / f"{key}.pt").read_bytes())
    # its test accuracy is cached beside it: 10,000 digits take seconds to classify
    record = cache_dir() / "features" / f"{key}.accuracy.json"
    try:
        saved = json.loads(record.read_text())
        if saved["weights_sha256"] == digest:
            return net, float(saved["accuracy"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or of other weights: measure it
    accuracy = class_accuracy(net, mnist().test, mnist().test_labels)
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"accuracy": accuracy, "weights_sha256": digest}))
    except OSError:
        pass  # a cache we cannot write to: measured again next time
    return net, accuracy


def shipped_digit_classifier(key: str) -> bytes:
    """The saved weights of the classifier ``key`` shipped in the package (a
    ``state_dict``), checked against their SHA-256 (``metrics.stacked.SHIPPED``)."""
    resource = resources.files(stacked_metric.__package__) / f"{key}.pt"
    try:
        data = resource.read_bytes()
    except OSError:
        data = None
    want = stacked_metric.SHIPPED[key]
    found = None if data is None else _sha256(data)
    if found != want:
        state = "missing" if found is None else f"damaged (SHA-256 {found}, not {want})"
        raise DataError(
            f"ganstep's Stacked MNIST digit classifier {resource} is {state}: reinstall "
            "ganstep (pip install --force-reinstall ganstep)"
        )
    return data


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
