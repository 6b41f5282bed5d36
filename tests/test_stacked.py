"""Stacked MNIST: the dataset's construction, the digit classifier's cache, and the
mode metrics on constructed cases (issue 13). Small subsets keep it fast."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import torch
from helpers import SHARED_DATA

from ganstep.trainer.data import load_dataset, load_stacked_mnist
from ganstep.trainer.data.stacked import stack
from ganstep.trainer.metrics.stacked import (
    channel_kl,
    digits_of,
    mode_metrics,
    stacked_metrics,
)

needs_mnist = pytest.mark.skipif(not (SHARED_DATA / "mnist").is_dir(), reason="no ../shared/data")


def test_stack_draws_each_channel_independently_and_labels_the_number():
    images = np.arange(10, dtype=np.uint8)[:, None, None] * np.ones((1, 2, 2), np.uint8)
    labels = np.arange(10)  # image k is filled with k and is digit k
    x, y = stack(images, labels, 20_000, seed=3)
    assert x.shape == (20_000, 3, 2, 2)
    digits = x[:, :, 0, 0].astype(np.int64)
    assert np.array_equal(y, digits @ np.array([100, 10, 1]))
    # independent and uniform: every one of the 1000 numbers occurs, the channels
    # are uncorrelated
    assert len(np.unique(y)) == 1000
    assert abs(np.corrcoef(digits[:, 0], digits[:, 1])[0, 1]) < 0.03
    x2, y2 = stack(images, labels, 20_000, seed=3)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)  # the seed fixes the set
    assert not np.array_equal(stack(images, labels, 20_000, seed=4)[1], y)
    with pytest.raises(ValueError, match="at least one sample"):
        stack(images, labels, 0, seed=0)


@needs_mnist
def test_stacked_mnist_from_the_mnist_files():
    data = load_stacked_mnist(SHARED_DATA, train_size=500, test_size=50)
    mnist = load_dataset("mnist", SHARED_DATA)
    assert data.train.shape == (500, 3, 28, 28) and data.test.shape == (50, 3, 28, 28)
    assert len(data.classes) == 1000 and data.classes[7] == "007"
    # each channel is an MNIST training digit, and the label spells their digits
    for i in (0, 123, 499):
        digits = []
        for c in range(3):
            match = (mnist.train[:, 0] == data.train[i, c]).flatten(1).all(1).nonzero()
            assert len(match) >= 1
            digits.append(int(mnist.labels[match[0, 0]]))
        assert data.labels[i] == 100 * digits[0] + 10 * digits[1] + digits[2]
    again = load_stacked_mnist(SHARED_DATA, train_size=500, test_size=50)
    assert torch.equal(again.train, data.train) and again.checksum == data.checksum


def test_mode_metrics_on_constructed_cases():
    every = torch.arange(1000).repeat(26)
    assert mode_metrics(every) == {"modes": 1000, "reverse_kl": pytest.approx(0.0, abs=1e-12)}
    collapsed = torch.arange(10).repeat(2600)  # 10 modes, evenly: KL = log(1000 / 10)
    found = mode_metrics(collapsed)
    assert found["modes"] == 10 and found["reverse_kl"] == pytest.approx(math.log(100))
    one = mode_metrics(torch.full((26,), 7))
    assert one == {"modes": 1, "reverse_kl": pytest.approx(math.log(1000))}
    with pytest.raises(ValueError, match="at least one sample"):
        mode_metrics(torch.tensor([], dtype=torch.long))


def test_each_channel_is_classified_on_its_own():
    """A stand-in classifier reading a digit from a channel's constant value: the metric
    must split channels, classify each, and spell the 3-digit mode from them."""

    def classify(x):  # (m, 1, S, S) with every pixel = digit / 10
        digit = (x[:, 0, 0, 0] * 10).round().long()
        return torch.nn.functional.one_hot(digit, 10).float()

    numbers = torch.tensor([0, 7, 70, 700, 999, 123])
    digits = torch.stack([numbers // 100, numbers // 10 % 10, numbers % 10], 1)
    samples = (digits.float() / 10)[:, :, None, None].expand(-1, -1, 4, 4)
    assert torch.equal(digits_of(classify, samples), digits)
    assert stacked_metrics(classify, samples)["modes"] == 6
    with pytest.raises(ValueError, match="3 channels"):
        digits_of(classify, samples[:, :1])


def test_channel_kl_on_constructed_cases():
    """Channel 0 always 7 (KL log 10), channel 1 two digits evenly (log 5), channel 2
    every digit evenly (0): the mean over channels."""
    n = 1000
    digits = torch.stack([torch.full((n,), 7), torch.arange(n) % 2, torch.arange(n) % 10], 1)
    assert channel_kl(digits) == pytest.approx((math.log(10) + math.log(5)) / 3)
    assert channel_kl(torch.stack([torch.arange(n) % 10] * 3, 1)) == pytest.approx(0, abs=1e-12)


def test_unclear_digits_are_those_read_below_the_threshold():
    """A stand-in classifier, sure of a channel whose pixel (0, 1) is lit and unsure of
    one whose pixel is dark: unclear_digits is the share of unsure channels."""

    def classify(x):
        digit = (x[:, 0, 0, 0] * 10).round().long()
        sure = torch.where(x[:, 0, 0, 1] > 0, 10.0, 1.0)  # softmax top: 0.9995 or 0.23
        return torch.nn.functional.one_hot(digit, 10).float() * sure[:, None]

    numbers = torch.arange(0, 1000, 37)
    digits = torch.stack([numbers // 100, numbers // 10 % 10, numbers % 10], 1)
    samples = (digits.float() / 10)[:, :, None, None].repeat(1, 1, 4, 4)
    samples[:, :, 0, 1] = 1.0
    assert stacked_metrics(classify, samples)["unclear_digits"] == 0.0
    samples[:, 1, 0, 1] = -1.0  # the second channel of every sample: a third of the digits
    found = stacked_metrics(classify, samples)
    assert found["unclear_digits"] == pytest.approx(1 / 3)
    assert found["modes"] == len(numbers)  # the reading itself is unchanged
    assert found["channel_kl"] == pytest.approx(channel_kl(digits))


@needs_mnist
def test_training_metrics_count_modes_with_a_cached_digit_classifier(cache, monkeypatch):
    """Caching and the metrics' presence are the point, not the classifier's quality:
    one feature step (30 classifier steps) and the first 1,000 of MNIST's test digits
    keep it to seconds."""
    from ganstep.trainer import evaluation
    from ganstep.trainer.config import Config
    from ganstep.trainer.evaluation import Evaluator, cached_digit_classifier

    def first_test_digits(*args):
        digits = load_dataset(*args)
        digits.test, digits.test_labels = digits.test[:1000], digits.test_labels[:1000]
        return digits

    monkeypatch.setattr(evaluation, "load_dataset", first_test_digits)
    monkeypatch.setenv("GANSTEP_CACHE", str(cache))
    data = load_stacked_mnist(SHARED_DATA, train_size=400, test_size=50)
    data.fit(32)
    cfg = Config(data="stacked-mnist", data_dir=str(SHARED_DATA), model="dcgan",
                 eval_samples=300, feature_steps=1)  # fmt: skip
    evaluator = Evaluator(data, cfg.resolved(data))
    assert 1 <= evaluator.floor["modes_floor"] <= 300  # of the real samples evaluated
    assert 0 <= evaluator.floor["digit_accuracy"] <= 1
    assert 0 <= evaluator.floor["unclear_digits_floor"] <= 1  # a 60-step classifier: unsure
    found = evaluator(data.train[:300])
    assert {"fid", "kid", "modes", "reverse_kl", "channel_kl", "unclear_digits"} <= set(found)
    # cached: a second call loads the same network instead of training one
    cached = list(cache.rglob("digits-mnist-32px-*.pt"))
    assert len(cached) == 1
    before = cached[0].stat().st_mtime_ns
    net, accuracy = cached_digit_classifier(str(SHARED_DATA), 32, 1)
    assert cached[0].stat().st_mtime_ns == before and accuracy == evaluator.floor["digit_accuracy"]
    assert torch.equal(net.head.weight, evaluator.digits.head.weight)


@needs_mnist
def test_the_default_digit_classifier_is_the_shipped_one(cache, monkeypatch):
    """At the default settings nothing is trained: the package's classifier (its SHA-256
    checked) reads MNIST's test digits as it did where it was trained (0.9895), and its
    accuracy is cached under the weights' SHA-256 for the next call."""
    from ganstep.trainer import evaluation
    from ganstep.trainer.config import Config
    from ganstep.trainer.evaluation import cached_digit_classifier, shipped_digit_classifier
    from ganstep.trainer.metrics.stacked import SHIPPED

    monkeypatch.setenv("GANSTEP_CACHE", str(cache))
    net, accuracy = cached_digit_classifier(str(SHARED_DATA), 32, Config().feature_steps)
    assert accuracy == pytest.approx(0.9895, abs=3e-4)  # 3 of 10,000 digits: rounding's room
    assert not list(cache.rglob("*.pt"))  # none trained, none cached
    (key,) = SHIPPED
    shipped = torch.load(io.BytesIO(shipped_digit_classifier(key)), weights_only=True)
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in shipped.items())
    record = json.loads((cache / "features" / f"{key}.accuracy.json").read_text())
    assert record == {"accuracy": accuracy, "weights_sha256": SHIPPED[key]}
    record["accuracy"] = 0.5  # the next call reads the record instead of measuring again
    (cache / "features" / f"{key}.accuracy.json").write_text(json.dumps(record))

    def unread(*args):  # and, with nothing to train or measure, reads no MNIST either
        raise AssertionError("MNIST read")

    monkeypatch.setattr(evaluation, "load_dataset", unread)
    assert cached_digit_classifier(str(SHARED_DATA), 32, Config().feature_steps)[1] == 0.5


def test_a_damaged_or_missing_shipped_classifier_is_named(monkeypatch):
    from ganstep.trainer.data import DataError
    from ganstep.trainer.evaluation import shipped_digit_classifier
    from ganstep.trainer.metrics import stacked

    (key,) = stacked.SHIPPED
    monkeypatch.setitem(stacked.SHIPPED, key, "0" * 64)
    with pytest.raises(DataError, match=r"classifier .* is damaged \(SHA-256 6a3bd.*reinstall"):
        shipped_digit_classifier(key)
    monkeypatch.setitem(stacked.SHIPPED, "digits-mnist-64px-v2-s6000", "0" * 64)
    with pytest.raises(DataError, match="is missing: reinstall ganstep"):
        shipped_digit_classifier("digits-mnist-64px-v2-s6000")
