"""BicycleStep: BicycleGAN's update (Zhu et al., 2017) on ganstep's sides.

BicycleGAN translates A to B with a latent code: G(a, z), an encoder E(b) -> (mu,
logvar), and two discriminators on B, one for the cVAE-GAN (D_VAE, on G's output from
an encoded z) and one for the cLR-GAN (D_LR, on G's output from a drawn z). One
iteration is eriklindernoren/PyTorch-GAN's ``bicyclegan.py``:

1. G and E's phase (both Ds frozen): ``mu, logvar = E(b)``, ``z = eps * exp(logvar / 2)
   + mu`` with ``eps = latent(n)``, ``fake_B = G(a, z)``; the pixelwise L1 of ``fake_B``
   against ``b``, the KL term ``0.5 * sum(exp(logvar) + mu^2 - logvar - 1)``, D_VAE's
   adversarial loss on ``fake_B``; a drawn ``z_lr = latent(n)``, ``fake_B_lr = G(a,
   z_lr)`` and D_LR's adversarial loss on it. One backward of their weighted sum into G
   and E, then **E steps**;
2. still in that phase, the latent regression through the *updated* E:
   ``latent_l1 * |E(fake_B_lr)[0] - z_lr|_1``, backward into G (added to its gradient
   from step 1), then G steps;
3. D's phase (one optimizer over D_VAE and D_LR): D_VAE on ``b`` and ``fake_B`` cut from
   G's graph, then D_LR on ``b`` and ``fake_B_lr``, each D's adversarial loss scaled by
   ``d_scale``.

Each adversarial loss is the objective's, summed over a multi-scale D's outputs (its
``MultiDiscriminator`` returns one map per scale). Its plain MSE against 1 and 0 is
ganstep's ``lsgan`` with ``g_scale=2`` and ``d_scale=2`` (the defaults).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import refused_block, scale_factor
from .cycle import _check_holds, check_batches, check_modules
from .game import Game
from .losses import scores, summed
from .objectives import Logs, Objective, get_objective, has_penalty
from .options import Options, Progress
from .precision import Precision
from .sides import Side, frozen


class BicycleStep:
    """One BicycleGAN iteration per call: ``step(real_A, real_B)``.

    Args:
        G: the generator, called ``G(a, z)``.
        E: the encoder, ``E(b)`` returning ``(mu, logvar)``, each ``(n, latent_dim)``.
        D_VAE: the discriminator of the cVAE-GAN (G's output from E's code).
        D_LR: the discriminator of the cLR-GAN (G's output from a drawn code).
        opt_g: G's optimizer; opt_e: E's, which steps between G's two backward passes;
            opt_d: one optimizer over D_VAE's and D_LR's parameters (Adam per parameter
            steps as the script's two Adams do).
        latent: ``latent(n)`` draws ``(n, latent_dim)`` codes: first the noise of the
            reparameterization, then the cLR-GAN's code, each iteration (the script
            draws both with ``np.random.normal``).
        objective: the adversarial objective (default ``lsgan``); it must not read the
            real batch in G's loss, nor have a penalty.
        g_scale: the factor of each of G's two adversarial losses (the script's MSE: 2).
        d_scale: the factor of each D's adversarial loss (the script's MSE: 2).
        pixel: the weight of the pixelwise L1 (``lambda_pixel``, 10).
        latent_l1: the weight of the latent regression (``lambda_latent``, 0.5).
        kl: the weight of the KL term (``lambda_kl``, 0.01).

    Returns a dict of detached tensors: ``loss_g`` (G and E's loss of step 1) and its
    parts ``loss_vae_gan``, ``loss_lr_gan``, ``pixel``, ``kl``; ``latent`` (step 2);
    ``loss_d_vae``, ``loss_d_lr`` and their sum ``loss_d``.
    """

    def __init__(
        self,
        G: nn.Module,
        E: nn.Module,
        D_VAE: nn.Module,
        D_LR: nn.Module,
        opt_g: torch.optim.Optimizer,
        opt_e: torch.optim.Optimizer,
        opt_d: torch.optim.Optimizer,
        *,
        latent: Callable[[int], Tensor],
        objective: str | Objective = "lsgan",
        g_scale: float = 2.0,
        d_scale: float = 2.0,
        pixel: float = 10.0,
        latent_l1: float = 0.5,
        kl: float = 0.01,
    ) -> None:
        check_modules({"G": G, "E": E, "D_VAE": D_VAE, "D_LR": D_LR})
        if not callable(latent):
            raise TypeError(f"latent must be callable as latent(n), got {latent!r}")
        objective = get_objective(objective)
        if objective.g_needs_real or not objective.reads_scores:
            raise ValueError(
                f"BicycleStep's G loss reads D on the fakes alone; objective {objective.name!r} "
                "needs more (use lsgan, ns, hinge, minimax or wgan)"
            )
        if has_penalty(objective) or objective.r1 > 0:
            raise ValueError("BicycleStep takes no penalty: build the objective without one")
        discriminators = nn.ModuleList([D_VAE, D_LR])
        _check_holds(opt_g, nn.ModuleList([G]), "opt_g", "G")
        _check_holds(opt_e, nn.ModuleList([E]), "opt_e", "E")
        _check_holds(opt_d, discriminators, "opt_d", "D_VAE and D_LR")
        self.E, self.latent = E, latent
        self.pixel = scale_factor(pixel, "pixel", zero=True)
        self.latent_l1 = scale_factor(latent_l1, "latent_l1", zero=True)
        self.kl = scale_factor(kl, "kl", zero=True)
        precision = Precision("fp32", next(G.parameters()).device.type)
        options = Options(objective, latent=latent,
                          g_scale=scale_factor(g_scale, "g_scale", zero=True),
                          d_scale=scale_factor(d_scale, "d_scale"))  # fmt: skip
        self.progress = Progress()
        sides = Side("G", G, opt_g, precision), Side("D", discriminators, opt_d, precision)
        self.game = Game(*sides, options, self.progress)
        self.encoder = Side("E", E, opt_e, precision)

    @property
    def iteration(self) -> int:
        """Iterations run so far."""
        return self.progress.iteration

    def __call__(self, real_A: Tensor, real_B: Tensor) -> dict[str, Tensor]:
        """One iteration on a batch of sources ``real_A`` and their targets ``real_B``."""
        game = self.game
        modules = [*game.eager_modules(), self.encoder.eager]
        if why := refused_block("a BicycleStep", game.precision.device_type, modules):
            raise RuntimeError(why)
        check_batches(real_A, real_B, "BicycleGAN pairs each source with its target")
        D_VAE, D_LR = game.d.module
        with frozen(game.d.module):
            logs, fake_B, fake_B_lr = self._g_and_e(real_A, real_B, D_VAE, D_LR)
        game.options.objective.before_d_step(game.d.module)  # WGAN(clamp_at="before")
        game.d.zero_grad()
        for key, D, fake in (("loss_d_vae", D_VAE, fake_B), ("loss_d_lr", D_LR, fake_B_lr)):
            loss = game.options.d_scale * self._d_loss(D, real_B, fake.detach())
            game.d.backward(loss)
            logs[key] = loss.detach()
        game.d.step(None)
        game.options.objective.after_d_step(game.d.module)  # WGAN's clipping
        logs["loss_d"] = logs["loss_d_vae"] + logs["loss_d_lr"]
        self.progress.iteration += 1
        return logs

    def _g_and_e(self, a: Tensor, b: Tensor, D_VAE: nn.Module, D_LR: nn.Module):
        """Steps 1 and 2: G and E's loss, E's step, the latent regression through the
        updated E, G's step. Returns the logs and the two fakes."""
        game, G, E = self.game, self.game.g.module, self.E
        game.g.zero_grad()
        self.encoder.zero_grad()
        mu, logvar = E(b)
        fake_B = G(a, self.latent(a.shape[0]) * torch.exp(logvar / 2) + mu)
        logs: Logs = {
            "pixel": self.pixel * F.l1_loss(fake_B, b),
            "kl": self.kl * 0.5 * torch.sum(torch.exp(logvar) + mu**2 - logvar - 1),
            "loss_vae_gan": game.options.g_scale * self._g_loss(D_VAE, fake_B),
        }
        z_lr = self.latent(a.shape[0])
        fake_B_lr = G(a, z_lr)
        logs["loss_lr_gan"] = game.options.g_scale * self._g_loss(D_LR, fake_B_lr)
        loss = sum(logs.values())
        game.g.backward(loss, retain_graph=True, also=self.encoder.params())
        self.encoder.step(None)
        # the latent regression reads E after its step, as the script's does
        with frozen(E):
            latent = self.latent_l1 * F.l1_loss(E(fake_B_lr)[0], z_lr)
        game.g.backward(latent)
        game.g.step(None)
        logs = {key: v.detach() for key, v in logs.items()}
        return {**logs, "loss_g": loss.detach(), "latent": latent.detach()}, fake_B, fake_B_lr

    def _g_loss(self, D: nn.Module, fake: Tensor) -> Tensor:
        found = scores(self.game, D(fake), fake)
        return summed([self.game.options.objective.g_loss(s) for s in found])[0]

    def _d_loss(self, D: nn.Module, real: Tensor, fake: Tensor) -> Tensor:
        objective = self.game.options.objective
        s_real, s_fake = scores(self.game, D(real), real), scores(self.game, D(fake), fake)
        return summed([objective.d_loss(r, f) for r, f in zip(s_real, s_fake, strict=True)])[0]

    def state_dict(self) -> dict:
        """The iteration count."""
        return {"iteration": self.iteration}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or set(state) != {"iteration"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"BicycleStep state needs the key 'iteration'; got {got}")
        self.progress.iteration = int(state["iteration"])

    def __repr__(self) -> str:
        o = self.game.options
        return (f"BicycleStep(objective={o.objective!r}, g_scale={o.g_scale}, "
                f"d_scale={o.d_scale}, pixel={self.pixel}, latent_l1={self.latent_l1}, "
                f"kl={self.kl})")  # fmt: skip
