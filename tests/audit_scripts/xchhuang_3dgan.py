"""xchhuang/simple-pytorch-3dgan's src/trainer.py loop (commit 927360a) on random voxels,
as the file writes it: Z drawn, D(X), D(G(Z)) not detached, BCELoss against ones and
zeros, D's accuracy, and D's zero_grad, backward and step only while that accuracy is
below params.d_thresh (0.8); then G's step on Z drawn anew, D's and G's gradients
cleared before its backward. Its params module inline (a namespace, d_lr 0.01 in place
of its 1e-5, so that D's accuracy reaches 0.8 within a few iterations), its net_G and
net_D smaller (8^3 voxels, 4 and 8 feature maps), no tensorboard, tqdm or plots."""

import types

import torch
from torch import nn, optim

params = types.SimpleNamespace(
    epochs=500,
    batch_size=8,
    soft_label=False,
    d_thresh=0.8,
    z_dim=4,
    g_lr=0.0025,
    d_lr=0.01,
    beta=(0.5, 0.999),
    cube_len=8,
    leak_value=0.2,
    bias=False,
    device=torch.device("cpu"),
)


class net_G(torch.nn.Module):  # noqa: N801 (as written)
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.z_dim = params.z_dim
        self.layer1 = torch.nn.Sequential(
            torch.nn.ConvTranspose3d(self.z_dim, 8, kernel_size=4, stride=1, bias=params.bias),
            torch.nn.BatchNorm3d(8),
            torch.nn.ReLU(True),
        )
        self.layer2 = torch.nn.Sequential(
            torch.nn.ConvTranspose3d(
                8, 1, kernel_size=4, stride=2, bias=params.bias, padding=(1, 1, 1)
            ),
            torch.nn.Sigmoid(),
        )

    def forward(self, x):
        out = x.view(-1, self.z_dim, 1, 1, 1)
        out = self.layer1(out)
        out = self.layer2(out)
        out = torch.squeeze(out)
        return out


class net_D(torch.nn.Module):  # noqa: N801 (as written)
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.cube_len = params.cube_len
        self.layer1 = torch.nn.Sequential(
            torch.nn.Conv3d(1, 4, kernel_size=4, stride=2, bias=params.bias, padding=(1, 1, 1)),
            torch.nn.BatchNorm3d(4),
            torch.nn.LeakyReLU(params.leak_value, inplace=True),
        )
        self.layer2 = torch.nn.Sequential(
            torch.nn.Conv3d(4, 1, kernel_size=4, stride=1, bias=params.bias),
            torch.nn.Sigmoid(),
        )

    def forward(self, x):
        out = x.view(-1, 1, self.cube_len, self.cube_len, self.cube_len)
        out = self.layer1(out)
        out = self.layer2(out)
        out = torch.squeeze(out)
        return out


def generateZ(args, batch):  # noqa: N802 (as written)
    Z = torch.Tensor(batch, params.z_dim).normal_(0, 0.33).to(params.device)
    return Z


def trainer(args):
    volumes = (torch.rand(64, params.cube_len, params.cube_len, params.cube_len) > 0.7).float()
    train_dset_loaders = torch.utils.data.DataLoader(
        volumes, batch_size=params.batch_size, shuffle=True
    )
    dset_loaders = {"train": train_dset_loaders}

    D = net_D(args)
    G = net_G(args)

    D_solver = optim.Adam(D.parameters(), lr=params.d_lr, betas=params.beta)
    G_solver = optim.Adam(G.parameters(), lr=params.g_lr, betas=params.beta)

    D.to(params.device)
    G.to(params.device)

    criterion_D = nn.BCELoss()
    criterion_G = nn.L1Loss()

    for epoch in range(params.epochs):  # noqa: B007 (as written)
        for phase in ["train"]:
            D.train()
            G.train()
            for i, X in enumerate(dset_loaders[phase]):
                X = X.to(params.device)
                batch = X.size()[0]
                Z = generateZ(args, batch)

                # ============= Train the discriminator =============#
                d_real = D(X)

                fake = G(Z)
                d_fake = D(fake)

                real_labels = torch.ones_like(d_real).to(params.device)
                fake_labels = torch.zeros_like(d_fake).to(params.device)

                if params.soft_label:
                    real_labels = torch.Tensor(batch).uniform_(0.7, 1.2).to(params.device)
                    fake_labels = torch.Tensor(batch).uniform_(0, 0.3).to(params.device)

                d_real_loss = criterion_D(d_real, real_labels)
                d_fake_loss = criterion_D(d_fake, fake_labels)
                d_loss = d_real_loss + d_fake_loss

                d_real_acu = torch.ge(d_real.squeeze(), 0.5).float()
                d_fake_acu = torch.le(d_fake.squeeze(), 0.5).float()
                d_total_acu = torch.mean(torch.cat((d_real_acu, d_fake_acu), 0))

                if d_total_acu < params.d_thresh:
                    D.zero_grad()
                    d_loss.backward()
                    D_solver.step()

                # =============== Train the generator ===============#
                Z = generateZ(args, batch)
                fake = G(Z)
                d_fake = D(fake)

                adv_g_loss = criterion_D(d_fake, real_labels)
                recon_g_loss = criterion_G(fake, X)
                g_loss = adv_g_loss

                D.zero_grad()
                G.zero_grad()
                g_loss.backward()
                G_solver.step()
                print(
                    f"Iteration-{i} , D(x) : {d_loss.item():.4}, D(G(x)) : "
                    f"{adv_g_loss.item():.4}, G L1: {recon_g_loss.item():.4}"
                )


trainer(types.SimpleNamespace(local_test=True, logs=None))
