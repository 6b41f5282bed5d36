# ruff: noqa: B007  (written as BigGAN-PyTorch writes it)
"""ajbrock/BigGAN-PyTorch's training step as it is written (train_fns.GAN_training_function,
utils.Distribution and prepare_z_y, BigGAN.G_D's forward, utils.toggle_grad), on linear
layers and random data: G and D keep their optimizers as attributes, a G_D module
holds both, z_ and y_ are Distribution tensors sampled in place, each of num_D_steps
D steps runs G under no_grad and D once on torch.cat([G_z, x]), then a G step through
G_D with D toggled off. Module-level loop, no main guard."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--num_D_steps", type=int, default=2)
parser.add_argument("--num_D_accumulations", type=int, default=1)
parser.add_argument("--num_G_accumulations", type=int, default=1)
parser.add_argument("--num_epochs", type=int, default=100)
config = vars(parser.parse_args())

dim_z, n_classes, nx, nh = 8, 4, 16, 32


class Distribution(torch.Tensor):
    """utils.Distribution: a tensor that samples itself in place."""

    def init_distribution(self, dist_type, **kwargs):
        self.dist_type = dist_type
        self.dist_kwargs = kwargs
        if self.dist_type == "normal":
            self.mean, self.var = kwargs["mean"], kwargs["var"]
        elif self.dist_type == "categorical":
            self.num_categories = kwargs["num_categories"]

    def sample_(self):
        if self.dist_type == "normal":
            self.normal_(self.mean, self.var)
        elif self.dist_type == "categorical":
            self.random_(0, self.num_categories)

    def to(self, *args, **kwargs):
        new_obj = Distribution(self)
        new_obj.init_distribution(self.dist_type, **self.dist_kwargs)
        new_obj.data = super().to(*args, **kwargs)
        return new_obj


def prepare_z_y(G_batch_size, dim_z, nclasses, device="cpu", z_var=1.0):
    z_ = Distribution(torch.randn(G_batch_size, dim_z, requires_grad=False))
    z_.init_distribution("normal", mean=0, var=z_var)
    z_ = z_.to(device, torch.float32)
    y_ = Distribution(torch.zeros(G_batch_size, requires_grad=False))
    y_.init_distribution("categorical", num_categories=nclasses)
    y_ = y_.to(device, torch.int64)
    return z_, y_


def toggle_grad(model, on_or_off):
    for param in model.parameters():
        param.requires_grad = on_or_off


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(n_classes, 4)
        self.model = nn.Sequential(nn.Linear(dim_z + 4, nh), nn.ReLU(), nn.Linear(nh, nx))
        self.optim = torch.optim.Adam(self.parameters(), lr=1e-4, betas=(0.0, 0.999))

    def forward(self, z, y):
        return self.model(torch.cat([z, y], 1))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(nx, nh), nn.ReLU())
        self.linear = nn.Linear(nh, 1)
        self.embed = nn.Embedding(n_classes, nh)
        self.optim = torch.optim.Adam(self.parameters(), lr=4e-4, betas=(0.0, 0.999))

    def forward(self, x, y=None):
        h = self.model(x)
        return self.linear(h) + torch.sum(self.embed(y) * h, 1, keepdim=True)


class G_D(nn.Module):
    def __init__(self, G, D):
        super().__init__()
        self.G = G
        self.D = D

    def forward(self, z, gy, x=None, dy=None, train_G=False):
        with torch.set_grad_enabled(train_G):
            G_z = self.G(z, self.G.shared(gy))
        D_input = torch.cat([G_z, x], 0) if x is not None else G_z
        D_class = torch.cat([gy, dy], 0) if dy is not None else gy
        D_out = self.D(D_input, D_class)
        if x is not None:
            return torch.split(D_out, [G_z.shape[0], x.shape[0]])
        return D_out


def discriminator_loss(dis_fake, dis_real):
    loss_real = torch.mean(F.relu(1.0 - dis_real))
    loss_fake = torch.mean(F.relu(1.0 + dis_fake))
    return loss_real, loss_fake


def generator_loss(dis_fake):
    return -torch.mean(dis_fake)


G = Generator()
D = Discriminator()
GD = G_D(G, D)
z_, y_ = prepare_z_y(config["batch_size"], dim_z, n_classes)
data = torch.rand(config["batch_size"] * 40, nx)
labels = torch.randint(n_classes, (config["batch_size"] * 40,))
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, labels),
    batch_size=config["batch_size"] * config["num_D_steps"] * config["num_D_accumulations"],
    shuffle=True,
)


def train(x, y):
    G.optim.zero_grad()
    D.optim.zero_grad()
    x = torch.split(x, config["batch_size"])
    y = torch.split(y, config["batch_size"])
    counter = 0
    toggle_grad(D, True)
    toggle_grad(G, False)
    for step_index in range(config["num_D_steps"]):
        D.optim.zero_grad()
        for accumulation_index in range(config["num_D_accumulations"]):
            z_.sample_()
            y_.sample_()
            D_fake, D_real = GD(z_[: config["batch_size"]], y_[: config["batch_size"]],
                                x[counter], y[counter], train_G=False)  # fmt: skip
            D_loss_real, D_loss_fake = discriminator_loss(D_fake, D_real)
            D_loss = (D_loss_real + D_loss_fake) / float(config["num_D_accumulations"])
            D_loss.backward()
            counter += 1
        D.optim.step()
    toggle_grad(D, False)
    toggle_grad(G, True)
    G.optim.zero_grad()
    for accumulation_index in range(config["num_G_accumulations"]):
        z_.sample_()
        y_.sample_()
        D_fake = GD(z_, y_, train_G=True)
        G_loss = generator_loss(D_fake) / float(config["num_G_accumulations"])
        G_loss.backward()
    G.optim.step()
    return {"G_loss": float(G_loss.item()), "D_loss_real": float(D_loss_real.item())}


for epoch in range(config["num_epochs"]):
    for i, (x, y) in enumerate(loader):
        metrics = train(x, y)
        print(epoch, i, metrics)
