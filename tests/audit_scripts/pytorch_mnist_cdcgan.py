# ruff: noqa: B007  (written as pytorch-MNIST-CelebA-cGAN-cDCGAN writes it)
"""znxlwm/pytorch-MNIST-CelebA-cGAN-cDCGAN pytorch_MNIST_cDCGAN.py: its generator and
discriminator (two input branches each, joined by torch.cat) made small (16x16 images,
narrow layers, z of 16), without its weight initialisation, GPU moves, timing, sample
grids and saving; its MNIST loader replaced by random images in [-1, 1) with random
labels. G is given one-hot labels as (n, 10, 1, 1) images (onehot[y_]), D the same
filled over the image (fill[y_]); the fakes' labels are drawn with torch.rand after z,
in each step."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class generator(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.deconv1_1 = nn.ConvTranspose2d(16, d * 2, 4, 1, 0)
        self.deconv1_1_bn = nn.BatchNorm2d(d * 2)
        self.deconv1_2 = nn.ConvTranspose2d(10, d * 2, 4, 1, 0)
        self.deconv1_2_bn = nn.BatchNorm2d(d * 2)
        self.deconv2 = nn.ConvTranspose2d(d * 4, d, 4, 2, 1)
        self.deconv2_bn = nn.BatchNorm2d(d)
        self.deconv3 = nn.ConvTranspose2d(d, 1, 4, 2, 1)

    def forward(self, input, label):
        x = F.relu(self.deconv1_1_bn(self.deconv1_1(input)))
        y = F.relu(self.deconv1_2_bn(self.deconv1_2(label)))
        x = torch.cat([x, y], 1)
        x = F.relu(self.deconv2_bn(self.deconv2(x)))
        return torch.tanh(self.deconv3(x))


class discriminator(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.conv1_1 = nn.Conv2d(1, d // 2, 4, 2, 1)
        self.conv1_2 = nn.Conv2d(10, d // 2, 4, 2, 1)
        self.conv2 = nn.Conv2d(d, d * 2, 4, 2, 1)
        self.conv2_bn = nn.BatchNorm2d(d * 2)
        self.conv3 = nn.Conv2d(d * 2, 1, 4, 1, 0)

    def forward(self, input, label):
        x = F.leaky_relu(self.conv1_1(input), 0.2)
        y = F.leaky_relu(self.conv1_2(label), 0.2)
        x = torch.cat([x, y], 1)
        x = F.leaky_relu(self.conv2_bn(self.conv2(x)), 0.2)
        return torch.sigmoid(self.conv3(x))


batch_size = 16
lr = 0.0002
train_epoch = 2
img_size = 16
data = torch.rand(batch_size * 4, 1, img_size, img_size) * 2 - 1
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.randint(0, 10, (len(data),))),
    batch_size=batch_size,
    shuffle=True,
)

torch.manual_seed(0)
G = generator(8)
D = discriminator(8)
BCE_loss = nn.BCELoss()
G_optimizer = optim.Adam(G.parameters(), lr=lr, betas=(0.5, 0.999))
D_optimizer = optim.Adam(D.parameters(), lr=lr, betas=(0.5, 0.999))

# label preprocess
onehot = torch.zeros(10, 10)
onehot = onehot.scatter_(1, torch.LongTensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).view(10, 1), 1).view(
    10, 10, 1, 1
)
fill = torch.zeros([10, 10, img_size, img_size])
for i in range(10):
    fill[i, i, :, :] = 1

for epoch in range(train_epoch):
    D_losses = []
    G_losses = []
    y_real_ = torch.ones(batch_size)
    y_fake_ = torch.zeros(batch_size)
    for x_, y_ in train_loader:
        # train discriminator D
        D.zero_grad()
        mini_batch = x_.size()[0]
        if mini_batch != batch_size:
            y_real_ = torch.ones(mini_batch)
            y_fake_ = torch.zeros(mini_batch)
        y_fill_ = fill[y_]
        D_result = D(x_, y_fill_).squeeze()
        D_real_loss = BCE_loss(D_result, y_real_)

        z_ = torch.randn((mini_batch, 16)).view(-1, 16, 1, 1)
        y_ = (torch.rand(mini_batch, 1) * 10).type(torch.LongTensor).squeeze()
        y_label_ = onehot[y_]
        y_fill_ = fill[y_]
        G_result = G(z_, y_label_)
        D_result = D(G_result, y_fill_).squeeze()
        D_fake_loss = BCE_loss(D_result, y_fake_)
        D_fake_score = D_result.data.mean()
        D_train_loss = D_real_loss + D_fake_loss
        D_train_loss.backward()
        D_optimizer.step()
        D_losses.append(D_train_loss.item())

        # train generator G
        G.zero_grad()
        z_ = torch.randn((mini_batch, 16)).view(-1, 16, 1, 1)
        y_ = (torch.rand(mini_batch, 1) * 10).type(torch.LongTensor).squeeze()
        y_label_ = onehot[y_]
        y_fill_ = fill[y_]
        G_result = G(z_, y_label_)
        D_result = D(G_result, y_fill_).squeeze()
        G_train_loss = BCE_loss(D_result, y_real_)
        G_train_loss.backward()
        G_optimizer.step()
        G_losses.append(G_train_loss.item())
