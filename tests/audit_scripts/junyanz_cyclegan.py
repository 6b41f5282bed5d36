# ruff: noqa: B007, UP008, UP031, E501  (written as pytorch-CycleGAN-and-pix2pix writes it)
"""junyanz/pytorch-CycleGAN-and-pix2pix's CycleGAN (models/cycle_gan_model.py, commit
032e884), made small: ``CycleGANModel``'s ``set_input``, ``forward``,
``backward_D_basic``, ``backward_D_A``, ``backward_D_B``, ``backward_G`` and
``optimize_parameters``, ``GANLoss`` (models/networks.py; ``--gan_mode`` lsgan, vanilla or wgangp),
``ImagePool`` (util/image_pool.py), ``BaseModel.set_requires_grad``, and train.py's
loop. One Adam over netG_A and netG_B, one over netD_A and netD_B; both Ds frozen in
G's step. Small convolutional Gs (InstanceNorm) and PatchGAN Ds on random unpaired 8x8
images; ``--pool_size`` and ``--lambda_identity`` as its options name them."""

import argparse
import itertools
import random

import torch
import torch.nn as nn


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        if self.pool_size > 0:
            self.num_imgs = 0
            self.images = []

    def query(self, images):
        if self.pool_size == 0:
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return_images = torch.cat(return_images, 0)
        return return_images


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
        elif gan_mode in ["wgangp"]:
            self.loss = None
        else:
            raise NotImplementedError("gan mode %s not implemented" % gan_mode)

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        if self.gan_mode in ["lsgan", "vanilla"]:
            target_tensor = self.get_target_tensor(prediction, target_is_real)
            loss = self.loss(prediction, target_tensor)
        elif self.gan_mode == "wgangp":
            if target_is_real:
                loss = -prediction.mean()
            else:
                loss = prediction.mean()
        return loss


def define_G():
    return nn.Sequential(
        nn.ReflectionPad2d(1),
        nn.Conv2d(1, 8, 3),
        nn.InstanceNorm2d(8),
        nn.ReLU(True),
        nn.Conv2d(8, 1, 3, 1, 1),
        nn.Tanh(),
    )


def define_D():
    return nn.Sequential(
        nn.Conv2d(1, 8, 4, 2, 1),
        nn.LeakyReLU(0.2, True),
        nn.Conv2d(8, 8, 4, 2, 1),
        nn.InstanceNorm2d(8),
        nn.LeakyReLU(0.2, True),
        nn.Conv2d(8, 1, 3, 1, 1),
    )


class CycleGANModel:
    def __init__(self, opt):
        self.opt = opt
        torch.manual_seed(0)
        self.netG_A = define_G()
        self.netG_B = define_G()
        self.netD_A = define_D()
        self.netD_B = define_D()
        self.fake_A_pool = ImagePool(opt.pool_size)
        self.fake_B_pool = ImagePool(opt.pool_size)
        self.criterionGAN = GANLoss(opt.gan_mode)
        self.criterionCycle = torch.nn.L1Loss()
        self.criterionIdt = torch.nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(
            itertools.chain(self.netG_A.parameters(), self.netG_B.parameters()),
            lr=opt.lr,
            betas=(opt.beta1, 0.999),
        )
        self.optimizer_D = torch.optim.Adam(
            itertools.chain(self.netD_A.parameters(), self.netD_B.parameters()),
            lr=opt.lr,
            betas=(opt.beta1, 0.999),
        )

    def set_input(self, input):
        AtoB = self.opt.direction == "AtoB"
        self.real_A = input["A" if AtoB else "B"]
        self.real_B = input["B" if AtoB else "A"]

    def forward(self):
        self.fake_B = self.netG_A(self.real_A)
        self.rec_A = self.netG_B(self.fake_B)

        self.fake_A = self.netG_B(self.real_B)
        self.rec_B = self.netG_A(self.fake_A)

    def backward_D_basic(self, netD, real, fake):
        # Real
        pred_real = netD(real)
        loss_D_real = self.criterionGAN(pred_real, True)
        # Fake
        pred_fake = netD(fake.detach())
        loss_D_fake = self.criterionGAN(pred_fake, False)
        # Combined loss
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        # backward
        loss_D.backward()
        return loss_D

    def backward_D_A(self):
        fake_B = self.fake_B_pool.query(self.fake_B)
        self.loss_D_A = self.backward_D_basic(self.netD_A, self.real_B, fake_B)

    def backward_D_B(self):
        fake_A = self.fake_A_pool.query(self.fake_A)
        self.loss_D_B = self.backward_D_basic(self.netD_B, self.real_A, fake_A)

    def backward_G(self):
        lambda_idt = self.opt.lambda_identity
        lambda_A = self.opt.lambda_A
        lambda_B = self.opt.lambda_B
        # Identity loss
        if lambda_idt > 0:
            # G_A should be identity if real_B is fed.
            self.idt_A = self.netG_A(self.real_B)
            self.loss_idt_A = self.criterionIdt(self.idt_A, self.real_B) * lambda_B * lambda_idt
            # G_B should be identity if real_A is fed.
            self.idt_B = self.netG_B(self.real_A)
            self.loss_idt_B = self.criterionIdt(self.idt_B, self.real_A) * lambda_A * lambda_idt
        else:
            self.loss_idt_A = 0
            self.loss_idt_B = 0

        # GAN loss D_A(G_A(A))
        self.loss_G_A = self.criterionGAN(self.netD_A(self.fake_B), True)
        # GAN loss D_B(G_B(B))
        self.loss_G_B = self.criterionGAN(self.netD_B(self.fake_A), True)
        # Forward cycle loss
        self.loss_cycle_A = self.criterionCycle(self.rec_A, self.real_A) * lambda_A
        # Backward cycle loss
        self.loss_cycle_B = self.criterionCycle(self.rec_B, self.real_B) * lambda_B
        # combined loss
        self.loss_G = (
            self.loss_G_A
            + self.loss_G_B
            + self.loss_cycle_A
            + self.loss_cycle_B
            + self.loss_idt_A
            + self.loss_idt_B
        )
        self.loss_G.backward()

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    def optimize_parameters(self):
        # forward
        self.forward()
        # G_A and G_B
        self.set_requires_grad([self.netD_A, self.netD_B], False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()
        # D_A and D_B
        self.set_requires_grad([self.netD_A, self.netD_B], True)
        self.optimizer_D.zero_grad()
        self.backward_D_A()
        self.backward_D_B()
        self.optimizer_D.step()


parser = argparse.ArgumentParser()
parser.add_argument("--gan_mode", type=str, default="lsgan")
parser.add_argument("--pool_size", type=int, default=50)
parser.add_argument("--lambda_A", type=float, default=10.0)
parser.add_argument("--lambda_B", type=float, default=10.0)
parser.add_argument("--lambda_identity", type=float, default=0.5)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--beta1", type=float, default=0.5)
parser.add_argument("--direction", type=str, default="AtoB")
parser.add_argument("--n_epochs", type=int, default=5)
opt = parser.parse_args()

model = CycleGANModel(opt)
dataset = [
    {"A": torch.rand(1, 1, 8, 8) * 2 - 1, "B": torch.rand(1, 1, 8, 8) * 2 - 1} for _ in range(20)
]
for epoch in range(opt.n_epochs):
    for i, data in enumerate(dataset):
        model.set_input(data)
        model.optimize_parameters()
