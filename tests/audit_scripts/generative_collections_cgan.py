# ruff: noqa: B007, UP004  (written as pytorch-generative-model-collections writes it)
"""znxlwm/pytorch-generative-model-collections CGAN.py: its generator(input, label),
discriminator(input, label) and CGAN.train() as written, the models made small (8x8
images, 3 classes, narrow layers), without its weight initialisation, GPU moves, timing,
logging and saving; its MNIST loader replaced by random images in [-1, 1) with random
labels. G is given the batch's labels one-hot (y_vec_), D the same filled over the image
(y_fill_, one map per class); the fakes are made for the real batch's labels. D's step
forwards D on the real batch, then G, then D on G's output, not detached; G's step
forwards G again on the same z_ and labels."""

import torch
import torch.nn as nn
import torch.optim as optim


class generator(nn.Module):
    def __init__(self, input_dim=8, output_dim=1, input_size=8):
        super().__init__()
        self.input_dim, self.output_dim, self.input_size = input_dim, output_dim, input_size
        self.fc = nn.Sequential(
            nn.Linear(self.input_dim + 3, 32),
            nn.BatchNorm1d(32),
            nn.ReLU(),
            nn.Linear(32, 8 * (self.input_size // 4) * (self.input_size // 4)),
            nn.BatchNorm1d(8 * (self.input_size // 4) * (self.input_size // 4)),
            nn.ReLU(),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(8, 4, 4, 2, 1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.ConvTranspose2d(4, self.output_dim, 4, 2, 1),
            nn.Tanh(),
        )

    def forward(self, input, label):
        x = torch.cat([input, label], 1)
        x = self.fc(x)
        x = x.view(-1, 8, (self.input_size // 4), (self.input_size // 4))
        return self.deconv(x)


class discriminator(nn.Module):
    def __init__(self, input_dim=1, output_dim=1, input_size=8):
        super().__init__()
        self.input_dim, self.output_dim, self.input_size = input_dim, output_dim, input_size
        self.conv = nn.Sequential(
            nn.Conv2d(self.input_dim + 3, 4, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(4, 8, 4, 2, 1),
            nn.BatchNorm2d(8),
            nn.LeakyReLU(0.2),
        )
        self.fc = nn.Sequential(
            nn.Linear(8 * (self.input_size // 4) * (self.input_size // 4), 16),
            nn.BatchNorm1d(16),
            nn.LeakyReLU(0.2),
            nn.Linear(16, self.output_dim),
            nn.Sigmoid(),
        )

    def forward(self, input, label):
        x = torch.cat([input, label], 1)
        x = self.conv(x)
        x = x.view(-1, 8 * (self.input_size // 4) * (self.input_size // 4))
        return self.fc(x)


class CGAN(object):
    def __init__(self):
        self.epoch, self.batch_size, self.z_dim = 2, 16, 8
        data = torch.rand(self.batch_size * 5, 1, 8, 8) * 2 - 1
        self.data_loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(data, torch.randint(0, 3, (len(data),))),
            batch_size=self.batch_size,
            shuffle=True,
        )
        self.G = generator(input_dim=self.z_dim, output_dim=1, input_size=8)
        self.D = discriminator(input_dim=1, output_dim=1, input_size=8)
        self.G_optimizer = optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.D_optimizer = optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.BCE_loss = nn.BCELoss()
        self.sample_z_ = torch.rand((self.batch_size, self.z_dim))

    def train(self):
        self.train_hist = {"D_loss": [], "G_loss": []}
        self.y_real_, self.y_fake_ = torch.ones(self.batch_size, 1), torch.zeros(self.batch_size, 1)
        self.D.train()
        for epoch in range(self.epoch):
            self.G.train()
            for iter, (x_, y_) in enumerate(self.data_loader):
                if iter == self.data_loader.dataset.__len__() // self.batch_size:
                    break
                z_ = torch.rand((self.batch_size, self.z_dim))
                y_vec_ = torch.zeros((self.batch_size, 3)).scatter_(
                    1, y_.type(torch.LongTensor).unsqueeze(1), 1
                )
                y_fill_ = y_vec_.unsqueeze(2).unsqueeze(3).expand(self.batch_size, 3, 8, 8)
                # update D network
                self.D_optimizer.zero_grad()
                D_real = self.D(x_, y_fill_)
                D_real_loss = self.BCE_loss(D_real, self.y_real_)
                G_ = self.G(z_, y_vec_)
                D_fake = self.D(G_, y_fill_)
                D_fake_loss = self.BCE_loss(D_fake, self.y_fake_)
                D_loss = D_real_loss + D_fake_loss
                self.train_hist["D_loss"].append(D_loss.item())
                D_loss.backward()
                self.D_optimizer.step()
                # update G network
                self.G_optimizer.zero_grad()
                G_ = self.G(z_, y_vec_)
                D_fake = self.D(G_, y_fill_)
                G_loss = self.BCE_loss(D_fake, self.y_real_)
                self.train_hist["G_loss"].append(G_loss.item())
                G_loss.backward()
                self.G_optimizer.step()


torch.manual_seed(0)
gan = CGAN()
gan.train()
