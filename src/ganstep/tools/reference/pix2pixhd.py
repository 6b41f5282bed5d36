"""NVIDIA/pix2pixHD's training step (``train.py`` and ``models/pix2pixHD_model.py``,
commit 2963391; its losses from ``models/networks.py``), as written: both losses from
one forward of G and three of its multi-scale D, G stepped first, then D."""

from __future__ import annotations

import torch
from torch import nn

from .common import Pairs


class GANLoss(nn.Module):
    """networks.GANLoss: MSE (LSGAN, its default) or BCE against a tensor of the real or
    fake label shaped as each prediction; for a multi-scale D (a list of lists), the
    last output of each scale, the losses added. (The source fills a FloatTensor of
    its device; here the prediction's dtype, 1 and 0 being exact in either.)"""

    def __init__(self, use_lsgan: bool = True, target_real_label: float = 1.0,
                 target_fake_label: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        self.real_label = target_real_label
        self.fake_label = target_fake_label
        if use_lsgan:
            self.loss = nn.MSELoss()
        else:
            self.loss = nn.BCELoss()

    def get_target_tensor(self, input, target_is_real):
        label = self.real_label if target_is_real else self.fake_label
        return torch.full_like(input, label)

    def __call__(self, input, target_is_real):
        if isinstance(input[0], list):
            loss = 0
            for input_i in input:
                pred = input_i[-1]
                target_tensor = self.get_target_tensor(pred, target_is_real)
                loss += self.loss(pred, target_tensor)
            return loss
        else:
            target_tensor = self.get_target_tensor(input[-1], target_is_real)
            return self.loss(input[-1], target_tensor)


class VGGLoss(nn.Module):
    """networks.VGGLoss on a given network returning its five feature maps (the source's
    frozen Vgg19 slices): L1 of each, the target's detached, weighted 1/32 ... 1."""

    def __init__(self, vgg: nn.Module) -> None:
        super().__init__()
        self.vgg = vgg
        self.criterion = nn.L1Loss()
        self.weights = [1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0]

    def forward(self, x, y):
        x_vgg, y_vgg = self.vgg(x), self.vgg(y)
        loss = 0
        for i in range(len(x_vgg)):
            loss += self.weights[i] * self.criterion(x_vgg[i], y_vgg[i].detach())
        return loss


def nvidia_pix2pixhd(netG, netD, optimizer_G, optimizer_D, batches: Pairs,
                     vgg: nn.Module | None = None, n_layers_D: int = 3, num_D: int = 2,
                     lambda_feat: float = 10.0, no_ganFeat_loss: bool = False,
                     no_lsgan: bool = False) -> list[dict[str, float]]:  # fmt: skip
    """``Pix2PixHDModel.forward`` and ``train.py``'s step, per batch ``(real_image,
    input_label)``, with ``--label_nc 0 --no_instance`` (the label map given as G's input
    as it is) and ``--pool_size 0`` (its default: the fake pool returns its query):
    ``fake_image = netG(input_label)``; ``netD`` (a MultiscaleDiscriminator returning, per
    scale, its intermediate features and last its prediction) on ``cat(input_label,
    fake_image.detach())``, then on the real pair, then on ``cat(input_label,
    fake_image)``; ``loss_D = (D_fake + D_real) * 0.5``; ``loss_G = G_GAN + G_GAN_Feat +
    G_VGG``, G_GAN_Feat the L1 of each scale's features but the prediction against the
    real pair's detached, weighted ``(1 / num_D) * (4 / (n_layers_D + 1)) * lambda_feat``,
    G_VGG ``VGGLoss(vgg)(fake_image, real_image) * lambda_feat`` (none without ``vgg``:
    ``--no_vgg_loss``). Then ``optimizer_G.zero_grad(); loss_G.backward();
    optimizer_G.step()`` (its backward reaches D's parameters too, zeroed next), then D's
    likewise: both gradients at the iteration's parameters. ganstep: ``simultaneous()``,
    ``"lsgan"`` with ``g_scale=2``, ``latent=None``, ``condition="real"``, ``d_map=True``,
    D giving (each scale's prediction, its features), a ``reads_real`` feature term and
    the VGG term."""
    criterionGAN = GANLoss(use_lsgan=not no_lsgan)
    criterionFeat = torch.nn.L1Loss()
    criterionVGG = VGGLoss(vgg) if vgg is not None else None
    history = []
    for real_image, input_label in batches:
        fake_image = netG.forward(input_label)

        # Fake Detection and Loss (discriminate(use_pool=True): the pool of size 0)
        pred_fake_pool = netD.forward(torch.cat((input_label, fake_image.detach()), dim=1))
        loss_D_fake = criterionGAN(pred_fake_pool, False)

        # Real Detection and Loss
        pred_real = netD.forward(torch.cat((input_label, real_image.detach()), dim=1))
        loss_D_real = criterionGAN(pred_real, True)

        # GAN loss (Fake Passability Loss)
        pred_fake = netD.forward(torch.cat((input_label, fake_image), dim=1))
        loss_G_GAN = criterionGAN(pred_fake, True)

        # GAN feature matching loss
        loss_G_GAN_Feat = 0
        if not no_ganFeat_loss:
            feat_weights = 4.0 / (n_layers_D + 1)
            D_weights = 1.0 / num_D
            for i in range(num_D):
                for j in range(len(pred_fake[i]) - 1):
                    loss_G_GAN_Feat += (
                        D_weights * feat_weights
                        * criterionFeat(pred_fake[i][j], pred_real[i][j].detach()) * lambda_feat
                    )  # fmt: skip

        # VGG feature matching loss
        loss_G_VGG = 0
        if criterionVGG is not None:
            loss_G_VGG = criterionVGG(fake_image, real_image) * lambda_feat

        losses = [loss_G_GAN, loss_G_GAN_Feat, loss_G_VGG, loss_D_real, loss_D_fake]
        losses = [torch.mean(x) if not isinstance(x, int) else x for x in losses]
        loss_dict = dict(zip(("G_GAN", "G_GAN_Feat", "G_VGG", "D_real", "D_fake"), losses,
                             strict=True))  # fmt: skip

        loss_D = (loss_dict["D_fake"] + loss_dict["D_real"]) * 0.5
        loss_G = loss_dict["G_GAN"] + loss_dict.get("G_GAN_Feat", 0) + loss_dict.get("G_VGG", 0)

        optimizer_G.zero_grad()
        loss_G.backward()
        optimizer_G.step()

        optimizer_D.zero_grad()
        loss_D.backward()
        optimizer_D.step()

        value = lambda x: float(x) if isinstance(x, int) else x.item()  # noqa: E731
        history.append({"loss_d": loss_D.item(), "loss_g": loss_G.item(),
                        **{k: value(v) for k, v in loss_dict.items()}})  # fmt: skip
    return history
