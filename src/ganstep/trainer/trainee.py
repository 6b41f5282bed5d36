"""What a run trains and a checkpoint holds: models, optimizers, the Step, the EMA of G
and every random stream the loop draws from, so that a resumed run is exact."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from ..engine import distributed as data_parallel
from ..engine.regularizers import lazy_regularization
from ..engine.schedules import simultaneous
from ..engine.step import Step
from .config import Config, labelled_objective
from .data import Dataset
from .lean_adam import LeanAdam
from .models import PackedGenerator, build_models

# Training data up to this size is kept on the GPU and drawn from there (MNIST at 32x32
# is 0.25 GB); larger data stays on the host and each batch is copied.
DATA_ON_GPU_BYTES = 2 * 2**30


def adam_for_graphs(device: torch.device, cfg: Config) -> bool:
    """Whether the run's Adam is built for CUDA graphs (capturable, its rate a tensor):
    on CUDA unless ``--graph off``. (A test rehearses graphed runs on the CPU through it.)"""
    return device.type == "cuda" and cfg.graph != "off"


class Trainee:
    """What a checkpoint holds: models, optimizers, Step, EMA and every random stream."""

    def __init__(self, cfg: Config, data: Dataset, device: torch.device) -> None:
        if device.type == "cuda" and device.index is None:
            # named as its tensors name theirs ("cuda:0"): set_lr finds a rate tensor on
            # this device by ==, and else replaces it, which a captured graph never reads
            device = torch.device("cuda", torch.cuda.current_device())
        self.cfg, self.device = cfg, device
        self.rank, self.world = data_parallel.rank(), data_parallel.world_size()
        torch.manual_seed(cfg.seed)  # the same models everywhere (and rank 0's are broadcast)
        classes = len(data.classes) if cfg.conditional else None
        G, D = build_models(cfg.model, data.sample_shape, cfg.objective, cfg.z_dim, cfg.width,
                            classes, pack=cfg.pack)  # fmt: skip
        self.G, self.D = G.to(device), D.to(device)
        self.opt_g, self.opt_d = self._optimizers(cfg, device)
        self.ema = copy.deepcopy(self.G).requires_grad_(False) if cfg.ema > 0 else None
        if self.ema is not None:  # listed once: walking the modules each step cost more
            self._ema_params = (list(self.ema.parameters()), list(self.G.parameters()))
            self._ema_buffers = list(zip(self.ema.buffers(), self.G.buffers(), strict=True))
        # Each process of a data parallel run draws its own z and batches.
        stream = cfg.seed + data_parallel.SEED_STRIDE * self.rank
        self.latent_gen = torch.Generator(device=device).manual_seed(stream + 1)
        # Batches are drawn where the data is: on the GPU when it fits there (no copy
        # per step, and a CUDA graph draws them itself), else on the host.
        self.data_device = torch.device("cpu")
        if device.type == "cuda" and data.training_bytes() <= DATA_ON_GPU_BYTES:
            self.data_device = device
        self.data_gen = torch.Generator(device=self.data_device).manual_seed(stream + 2)
        objective = labelled_objective(cfg)
        schedule = simultaneous(fused=True) if cfg.fused else cfg.schedule
        compiled = {"none": False, "default": True}.get(cfg.compile, cfg.compile)
        # With packing the Step sees a G that makes packs; checkpoints and samples keep G.
        stepped_g = PackedGenerator(self.G, cfg.pack) if cfg.pack > 1 else self.G
        # D on cat(real, fake), one forward and one backward where the loop has two,
        # wherever that is the same math (concat="auto": not with BatchNorm in training
        # mode, nor with augmentation, which draws for each input anew): 0.93x the
        # default run's iteration.
        self.step = Step(stepped_g, self.D, self.opt_g, self.opt_d, objective=objective,
                         schedule=schedule, latent=self.latent, precision=cfg.precision,
                         compile=compiled, distributed=self.world > 1,
                         condition="real" if cfg.conditional else None,
                         accumulate=cfg.accumulate, concat="auto",
                         augment=None if cfg.augment == "none" else cfg.augment,
                         log_scores=True)  # fmt: skip
        if self.rank:
            torch.manual_seed(stream)

    def _optimizers(self, cfg: Config, device: torch.device) -> tuple:
        """G's and D's Adam, and the rates and betas ``set_lr`` and a resume restore."""
        betas = (cfg.beta1, cfg.beta2)
        d_rates = (cfg.lr_d, betas)
        if cfg.r1 and cfg.r1_every > 1:  # lazy R1: StyleGAN2's lr and betas for D
            d_rates = lazy_regularization(cfg.lr_d, betas, cfg.r1_every)
        self.rates = {"g": (cfg.lr_g, betas), "d": d_rates}
        # For CUDA graphs (--graph), Adam keeps its step count and rate on the device
        # (capturable, the rate a tensor that --lr-decay changes in place); under fp16
        # fused, which takes the loss scaler's overflow flag on the device.
        self.capturable = adam_for_graphs(device, cfg)
        pairs = ((self.G, self.rates["g"]), (self.D, d_rates))
        if self.capturable:
            kind = {"fused": True} if cfg.precision == "fp16" else {"foreach": True}
            return tuple(torch.optim.Adam(m.parameters(), torch.tensor(rate, device=device),
                                          betas=b, capturable=True, **kind)
                         for m, (rate, b) in pairs)  # fmt: skip
        # On the CPU, torch's default Adam loops over the parameters in Python; its fused
        # kernel is the same update in one call per optimizer, and LeanAdam calls it
        # without torch's Python around it (0.88x the default run's iteration). On CUDA
        # the default, foreach, is already one call per group.
        adam = LeanAdam if device.type == "cpu" else torch.optim.Adam
        return tuple(adam(m.parameters(), rate, betas=b) for m, (rate, b) in pairs)

    def latent(self, n: int) -> Tensor:
        """z for ``n`` fakes (n, z_dim); packed, for ``n`` packs (n, pack, z_dim), drawn
        as PacGAN draws them: one batch of ``n`` per pack slot, slot after slot."""
        z = [torch.randn(n, self.cfg.z_dim, generator=self.latent_gen, device=self.device)
             for _ in range(self.cfg.pack)]  # fmt: skip
        return z[0] if len(z) == 1 else torch.stack(z, dim=1)

    @property
    def sampler(self) -> nn.Module:
        """The G that samples and metrics use: the EMA when it is on."""
        return self.ema if self.ema is not None else self.G

    def set_lr(self, scale: float) -> None:
        for opt, who in ((self.opt_g, "g"), (self.opt_d, "d")):
            for group in opt.param_groups:
                rate, lr = self.rates[who][0] * scale, group["lr"]
                if not self.capturable:
                    group["lr"] = rate
                elif isinstance(lr, Tensor) and lr.device == self.device:
                    lr.fill_(rate)  # in place: a captured graph reads this tensor
                else:  # a checkpoint's rate (a float, or a tensor loaded on the CPU)
                    group["lr"] = torch.tensor(rate, device=self.device)

    @torch.no_grad()
    def update_ema(self) -> None:
        if self.ema is not None:
            # one call for all parameters: the per-tensor loop's dispatch cost was most
            # of the EMA's time on small models
            torch._foreach_lerp_(*self._ema_params, 1 - self.cfg.ema)
            for e, b in self._ema_buffers:
                e.copy_(b)

    def rng_state(self) -> dict:
        cuda = self.device.type == "cuda"
        return {
            "torch": torch.get_rng_state(),
            "latent": self.latent_gen.get_state(),
            "data": self.data_gen.get_state(),
            "cuda": torch.cuda.get_rng_state(self.device) if cuda else None,
        }

    def set_rng_state(self, rng: dict) -> None:
        torch.set_rng_state(rng["torch"])
        if rng["latent"].numel() != self.latent_gen.get_state().numel():
            wrote, here = ("CUDA", "the CPU") if self.device.type == "cpu" else ("the CPU", "CUDA")
            raise ValueError(
                f"this checkpoint's z stream was drawn on {wrote} and this run is on {here}: "
                f"resume it on the device it was written on (--device), or its random "
                "streams cannot continue"
            )
        self.latent_gen.set_state(rng["latent"])
        if rng["data"].numel() != self.data_gen.get_state().numel():
            # the batches were drawn on the other device (a checkpoint from before they
            # were drawn on the GPU, or data that no longer fits there): go on there
            other = self.device if self.data_device.type == "cpu" else torch.device("cpu")
            self.data_device, self.data_gen = other, torch.Generator(device=other)
        self.data_gen.set_state(rng["data"])
        if self.device.type == "cuda" and rng.get("cuda") is not None:
            torch.cuda.set_rng_state(rng["cuda"], self.device)

    def state_dict(self) -> dict:
        """Everything to continue exactly; in a data parallel run, call it on every
        process (it gathers each one's random streams under ``rng_ranks``)."""
        rng = self.rng_state()
        ranks = [rng]
        if self.world > 1:
            ranks = [None] * self.world
            torch.distributed.all_gather_object(ranks, rng)
        return {
            "G": self.G.state_dict(),
            "D": self.D.state_dict(),
            "opt_g": self.opt_g.state_dict(),
            "opt_d": self.opt_d.state_dict(),
            "step_state": self.step.state_dict(),
            "ema": self.ema.state_dict() if self.ema is not None else None,
            "rng": rng,
            "rng_ranks": ranks,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a checkpoint (loaded on the CPU: RNG states must stay CPU tensors)."""
        self.G.load_state_dict(state["G"])
        self.D.load_state_dict(state["D"])
        for opt, key in ((self.opt_g, "opt_g"), (self.opt_d, "opt_d")):
            _load_keeping_kind(opt, state[key])
        self.set_lr(1.0)  # the config wins over the saved rates: a resume may change them
        for opt, who in ((self.opt_g, "g"), (self.opt_d, "d")):
            for group in opt.param_groups:
                group["betas"] = self.rates[who][1]
        self.step.load_state_dict(state["step_state"])
        if self.ema is not None and state.get("ema") is not None:
            self.ema.load_state_dict(state["ema"])
        ranks = state.get("rng_ranks", [state["rng"]])
        if len(ranks) != self.world:
            raise ValueError(
                f"this checkpoint was written by {len(ranks)} process(es); resume it with "
                f"the same number (now {self.world}), or its random streams cannot continue"
            )
        self.set_rng_state(ranks[self.rank])


_KIND = ("capturable", "foreach", "fused")


def _load_keeping_kind(opt: torch.optim.Optimizer, saved: dict) -> None:
    """Load ``saved`` into ``opt`` as the kind of Adam this run built: torch takes the
    saved groups' flags (a checkpoint of an eager run would make a graphed run's Adam
    not capturable) and puts each step count where those flags keep it."""
    own = {k: opt.defaults[k] for k in _KIND if k in opt.defaults}
    opt.load_state_dict(saved)
    on_device = bool(own.get("capturable") or own.get("fused"))
    for group in opt.param_groups:
        group.update(own)
        for p in group["params"]:
            step = opt.state.get(p, {}).get("step")
            if isinstance(step, Tensor):
                where = p.device if on_device else torch.device("cpu")
                opt.state[p]["step"] = step.to(device=where, dtype=torch.float32)
