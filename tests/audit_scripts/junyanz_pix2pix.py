# ruff: noqa: B007, UP008, E501  (written as pytorch-CycleGAN-and-pix2pix writes it)
"""junyanz/pytorch-CycleGAN-and-pix2pix's pix2pix, made small: ``Pix2PixModel``'s
``set_input``, ``forward``, ``backward_D``, ``backward_G`` and ``optimize_parameters``
(models/pix2pix_model.py), ``GANLoss`` with ``gan_mode='vanilla'`` (models/networks.py:
targets as registered buffers expanded to the prediction, ``BCEWithLogitsLoss``),
``BaseModel.set_requires_grad``, and train.py's loop (``model.set_input(data)``,
``model.optimize_parameters()``). D is given the source and the image joined along the
channels (``torch.cat((self.real_A, self.fake_B), 1)``), the fakes first, its loss
halved; G's loss adds the L1 to the target times ``lambda_L1`` (100). Small
convolutional G and PatchGAN D on random 8x8 image pairs."""

import torch
import torch.nn as nn


class GANLoss(nn.Module):
    def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
        super(GANLoss, self).__init__()
        self.register_buffer("real_label", torch.tensor(target_real_label))
        self.register_buffer("fake_label", torch.tensor(target_fake_label))
        self.gan_mode = gan_mode
        if gan_mode == "lsgan":
            self.loss = nn.MSELoss()
        elif gan_mode == "vanilla":
            self.loss = nn.BCEWithLogitsLoss()

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        target_tensor = self.get_target_tensor(prediction, target_is_real)
        loss = self.loss(prediction, target_tensor)
        return loss


class Pix2PixModel:
    def __init__(self):
        torch.manual_seed(0)
        self.netG = nn.Sequential(
            nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(), nn.Conv2d(8, 3, 3, 1, 1), nn.Tanh()
        )
        self.netD = nn.Sequential(
            nn.Conv2d(6, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 4, 1, 1)
        )
        self.criterionGAN = GANLoss("vanilla")
        self.criterionL1 = torch.nn.L1Loss()
        self.lambda_L1 = 100.0
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=0.0002, betas=(0.5, 0.999))

    def set_input(self, input):
        self.real_A = input["A"]
        self.real_B = input["B"]

    def forward(self):
        self.fake_B = self.netG(self.real_A)

    def backward_D(self):
        fake_AB = torch.cat((self.real_A, self.fake_B), 1)
        pred_fake = self.netD(fake_AB.detach())
        self.loss_D_fake = self.criterionGAN(pred_fake, False)
        real_AB = torch.cat((self.real_A, self.real_B), 1)
        pred_real = self.netD(real_AB)
        self.loss_D_real = self.criterionGAN(pred_real, True)
        self.loss_D = (self.loss_D_fake + self.loss_D_real) * 0.5
        self.loss_D.backward()

    def backward_G(self):
        fake_AB = torch.cat((self.real_A, self.fake_B), 1)
        pred_fake = self.netD(fake_AB)
        self.loss_G_GAN = self.criterionGAN(pred_fake, True)
        self.loss_G_L1 = self.criterionL1(self.fake_B, self.real_B) * self.lambda_L1
        self.loss_G = self.loss_G_GAN + self.loss_G_L1
        self.loss_G.backward()

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    def optimize_parameters(self):
        self.forward()
        self.set_requires_grad(self.netD, True)
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.set_requires_grad(self.netD, False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


model = Pix2PixModel()
dataset = [
    {"A": torch.rand(4, 3, 8, 8) * 2 - 1, "B": torch.rand(4, 3, 8, 8) * 2 - 1} for _ in range(20)
]
for epoch in range(5):
    for i, data in enumerate(dataset):
        model.set_input(data)
        model.optimize_parameters()
