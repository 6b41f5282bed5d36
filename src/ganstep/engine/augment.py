"""Differentiable augmentation of every D input: DiffAugment (Zhao et al., 2020) and an
adaptive probability in the manner of ADA (Karras et al., 2020).

``Step(augment=a)`` calls ``a(x)`` on every batch D sees, in every phase: the real and
the fake batch of a D step, the fake batch of G's step (G's gradient flows through the
augmentation), the real batch R1 differentiates (its gradient is taken with respect to
the batch before augmentation, as StyleGAN2-ADA does) and WGAN-GP's interpolates.
Augmentations draw random numbers from torch's global generator, so a D step with
augmentation is not a pure function of its inputs: ganstep forwards D as the loop
does (no merged forwards, no fused step) unless ``d_forwards="merged"``.

:class:`DiffAugment` is one fixed policy. :class:`Adaptive` applies each transform of
a policy to each sample with probability ``p`` and moves ``p`` by ADA's rule: after
every ``interval``-th iteration, by ``sign(E[sign(D(real))] - target) * batch *
interval / (kimg * 1000)``, never below 0. Its ``p`` is logged (``augment_p``) and kept in
``Step.state_dict()``.

Any callable ``x -> x`` works as ``augment``; an object that also has ``observe`` and
``end_iteration`` (as :class:`Adaptive`) is told D's real scores and each iteration's end.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def brightness(x: Tensor) -> Tensor:
    """Add one uniform offset in [-0.5, 0.5) per sample."""
    return x + (_uniform(x) - 0.5)


def saturation(x: Tensor) -> Tensor:
    """Scale each sample's distance from its per-pixel channel mean by U[0, 2)."""
    mean = x.mean(dim=1, keepdim=True)
    return (x - mean) * (_uniform(x) * 2) + mean


def contrast(x: Tensor) -> Tensor:
    """Scale each sample's distance from its mean by U[0.5, 1.5)."""
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    return (x - mean) * (_uniform(x) + 0.5) + mean


def translation(x: Tensor, ratio: float = 0.125) -> Tensor:
    """Shift each sample by a whole number of pixels, up to ``ratio`` of its height and
    width each way, filling with zeros: pixel (i, j) of the output is pixel
    (i + dy, j + dx) of the input, as DiffAugment's ``rand_translation`` reads it (dy
    drawn first, for every sample, then dx)."""
    n, _, h, w = x.shape
    dy = _shifts(n, int(h * ratio + 0.5), x.device)
    dx = _shifts(n, int(w * ratio + 0.5), x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1) + dy.view(n, 1, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w) + dx.view(n, 1, 1)
    inside = ((rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)).unsqueeze(1)
    index = (rows.clamp(0, h - 1) * w + cols.clamp(0, w - 1)).view(n, 1, h * w)
    moved = x.reshape(n, x.shape[1], h * w).gather(2, index.expand(-1, x.shape[1], -1))
    return moved.view_as(x) * inside.to(x.dtype)


def cutout(x: Tensor, ratio: float = 0.5) -> Tensor:
    """Zero one square of ``ratio`` of the height and width per sample, centred anywhere
    in the image (the square may run off the edge)."""
    n, _, h, w = x.shape
    size_h, size_w = int(h * ratio + 0.5), int(w * ratio + 0.5)
    cy = torch.randint(0, h + (1 - size_h % 2), (n, 1, 1), device=x.device)
    cx = torch.randint(0, w + (1 - size_w % 2), (n, 1, 1), device=x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1) - (cy - size_h // 2)
    cols = torch.arange(w, device=x.device).view(1, 1, w) - (cx - size_w // 2)
    hole = (rows >= 0) & (rows < size_h) & (cols >= 0) & (cols < size_w)
    return x * (~hole).unsqueeze(1).to(x.dtype)


TRANSFORMS = {
    "color": (brightness, saturation, contrast),
    "translation": (translation,),
    "cutout": (cutout,),
}


def _uniform(x: Tensor) -> Tensor:
    return torch.rand(x.shape[0], 1, 1, 1, dtype=x.dtype, device=x.device)


def _shifts(n: int, most: int, device: torch.device) -> Tensor:
    return torch.randint(-most, most + 1, (n,), device=device)


def _policy(policy: str) -> list:
    if not isinstance(policy, str):
        raise TypeError(
            f"an augmentation policy is a string such as 'color,translation', got {policy!r}"
        )
    names = [p.strip() for p in policy.split(",") if p.strip()]
    unknown = [p for p in names if p not in TRANSFORMS]
    if unknown or not names:
        raise ValueError(
            f"unknown augmentation {unknown or policy!r}; a policy names some of "
            f"{', '.join(TRANSFORMS)}, separated by commas"
        )
    return [f for name in names for f in TRANSFORMS[name]]


def _check_images(x: Tensor) -> None:
    if x.dim() != 4:
        raise ValueError(
            f"augmentation works on images (n, channels, height, width), got shape {tuple(x.shape)}"
        )


class DiffAugment:
    """DiffAugment's policy: each transform applied to every sample, in the policy's
    order (``"color,translation,cutout"``, the paper's choice for small data)."""

    def __init__(self, policy: str = "color,translation,cutout") -> None:
        self.policy = policy
        self.transforms = _policy(policy)

    def __call__(self, x: Tensor) -> Tensor:
        _check_images(x)
        for transform in self.transforms:
            x = transform(x)
        return x

    def __repr__(self) -> str:
        return f"DiffAugment({self.policy!r})"


class Adaptive:
    """ADA's adaptive probability over a DiffAugment policy.

    Each transform is applied to each sample with probability ``p`` (a sample keeps its
    input where it is not drawn). ``p`` starts at ``p`` and moves as StyleGAN2-ADA's
    training loop moves it: after every ``interval``-th iteration (its ``batch_idx %
    ada_interval == 0`` after ``batch_idx += 1``), by ``sign(mean sign - target) * rows
    / (kimg * 1000)``, never below 0, where the mean sign is over every real score
    observed since the last update and ``rows`` counts the real samples of the D steps
    since then (SG2-ADA's ``batch_size * ada_interval``).

    The Step reports D's real scores of each D step and each lazy R1 step to
    :meth:`observe` (SG2-ADA's ``Loss/signs/real``, reported in phases Dmain and Dreg)
    and calls :meth:`end_iteration`; a data parallel Step sums the signs and rows of all
    processes, as SG2-ADA's statistics do.

    ``p`` and the running sums live on the images' device (moved there at the first
    call) and change in place, with no read on the host: a CUDA graph holds an
    iteration with or without the update (:meth:`moves_after` tells which).
    """

    capturable = True  # its update is device work in place (see cuda_graph)

    def __init__(self, policy: str = "color,translation,cutout", target: float = 0.6,
                 interval: int = 4, kimg: float = 500.0, p: float = 0.0) -> None:  # fmt: skip
        from .checks import non_negative, positive_int

        self.transforms = _policy(policy)
        self.policy = policy
        self.target = float(target)
        if not -1.0 <= self.target <= 1.0:
            raise ValueError(f"Adaptive target is a mean sign, in [-1, 1]; got {target!r}")
        self.interval = positive_int(interval, "Adaptive interval")
        self.kimg = non_negative(kimg, "Adaptive kimg")
        if self.kimg == 0:
            raise ValueError("Adaptive kimg must be > 0: it sets how fast p moves")
        self.p = torch.tensor(non_negative(p, "Adaptive p"), dtype=torch.float64)
        # since the last update: the sum of the signs, how many, and the D steps' real rows
        self.totals = torch.zeros(3, dtype=torch.float64)

    def __call__(self, x: Tensor) -> Tensor:
        _check_images(x)
        if self.p.device != x.device:  # once: from then on p is read where x is
            self.p, self.totals = self.p.to(x.device), self.totals.to(x.device)
        p = self.p.to(dtype=x.dtype)
        for transform in self.transforms:
            drawn = torch.rand(x.shape[0], 1, 1, 1, device=x.device, dtype=x.dtype) < p
            x = torch.where(drawn, transform(x), x)
        return x

    def observe(self, real_scores: Tensor, *, d_step: bool = True) -> None:
        """Record the signs of D's scores on a real batch (``d_step``: of a D step,
        whose rows count towards the update's size; a lazy R1 step's do not)."""
        signs = real_scores.detach().sign()
        if self.totals.device != signs.device:
            self.totals = self.totals.to(signs.device)
        self.totals[0].add_(signs.double().sum())  # in place: no copy back, as += makes
        self.totals[1].add_(signs.numel())
        if d_step:
            self.totals[2].add_(real_scores.shape[0])

    def moves_after(self, done: int) -> bool:
        """Whether :meth:`end_iteration` after ``done`` iterations updates ``p``."""
        return done % self.interval == 0

    def end_iteration(
        self, done: int, all_reduce: Callable[[Tensor], None] | None = None
    ) -> dict[str, Tensor]:
        """After ``done`` iterations: move ``p`` when ``done`` is a multiple of the
        interval (``all_reduce`` sums a tensor across processes in place); return
        ``{"augment_p": p}``."""
        if self.moves_after(done):
            total = self.totals.to(self.p.device)
            if all_reduce is not None:
                total = total.clone()
                all_reduce(total)
            moved = self.p + torch.sign(total[0] / total[1] - self.target) * (
                total[2] / (self.kimg * 1000)
            )
            # nothing observed (0 / 0): p stays, chosen on the device
            self.p.copy_(torch.where(total[1] > 0, moved.clamp(min=0.0), self.p))
            self.totals.zero_()
        return {"augment_p": self.p.clone()}

    def state_dict(self) -> dict:
        """``p`` and what was observed since the last update (a resume mid-interval)."""
        return {"p": self.p.cpu().clone(), "totals": self.totals.cpu().clone()}

    def load_state_dict(self, state: dict) -> None:
        """A state of :meth:`state_dict`, or one ganstep wrote before 2026-11-29 (the
        signs themselves, ``{"p", "signs", "rows"}``), which comes to the same update."""
        if isinstance(state, dict) and set(state) == {"p", "signs", "rows"}:
            signs = torch.cat([torch.as_tensor(s).flatten().double() for s in state["signs"]]
                              or [torch.zeros(0, dtype=torch.float64)])  # fmt: skip
            totals = torch.stack([signs.sum(), torch.tensor(float(signs.numel()),
                                  dtype=torch.float64), torch.tensor(float(state["rows"]),
                                  dtype=torch.float64)])  # fmt: skip
        elif isinstance(state, dict) and set(state) == {"p", "totals"}:
            totals = torch.as_tensor(state["totals"], dtype=torch.float64)
            if totals.shape != (3,):
                raise ValueError(f"Adaptive totals has shape {tuple(totals.shape)}, not (3,)")
        else:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"Adaptive state needs the keys 'p' and 'totals'; got {got}")
        device = self.p.device
        self.p = torch.as_tensor(state["p"], dtype=torch.float64).to(device).clone()
        self.totals = totals.to(device).clone()

    def __repr__(self) -> str:
        return (f"Adaptive({self.policy!r}, target={self.target}, interval={self.interval}, "
                f"kimg={self.kimg}, p={self.p.item():.4f})")  # fmt: skip


def is_policy(spec: object) -> bool:
    """Whether ``spec`` is a DiffAugment policy: names of :data:`TRANSFORMS` joined by
    commas (``"translation,cutout"``)."""
    return isinstance(spec, str) and all(p.strip() in TRANSFORMS for p in spec.split(","))


def get_augment(spec: object):
    """``None``, a callable ``x -> x``, or a name: ``"diffaugment"`` (DiffAugment's
    color, translation and cutout), a DiffAugment policy such as
    ``"translation,cutout"`` (as ``DiffAugment(x, policy=...)`` takes it), or ``"ada"``
    (:class:`Adaptive` over color, translation and cutout)."""
    if spec is None or spec == "none":
        return None
    if spec == "diffaugment":
        return DiffAugment()
    if spec == "ada":
        return Adaptive()
    if is_policy(spec):
        return DiffAugment(",".join(p.strip() for p in spec.split(",")))
    if isinstance(spec, str):
        raise ValueError(
            f"unknown augment {spec!r}; choose diffaugment, ada, none, or a DiffAugment "
            f"policy naming some of {', '.join(TRANSFORMS)} separated by commas (e.g. "
            "'translation,cutout'; ganstep.engine.augment.Adaptive(policy) for ADA over a policy)"
        )
    if not callable(spec):
        raise TypeError(f"augment must be callable as augment(x), or a name; got {spec!r}")
    return spec
