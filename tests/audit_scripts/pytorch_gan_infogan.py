"""PyTorch-GAN's implementations/infogan/infogan.py loop (commit 1e35104) on random data,
as the script writes it: module-level argparse and loop, no main guard; three Adams
(G's, D's, and optimizer_info over both); G(noise, labels, code) concatenating its
three inputs; D(img) with Dropout and BatchNorm(eps 0.8) returning validity, class
probabilities through a Softmax and a code; MSELoss on the validity (LSGAN); G first on
z, one-hot labels and a uniform code drawn with numpy, then D on the real batch and on
gen_imgs.detach(), (real + fake) / 2, then the info step on fresh draws (labels, z, a
code from normal(-1, 1)) with CrossEntropyLoss on the Softmax's output and 0.1 MSELoss
on the code. Linear layers stand for its convolutions."""

import argparse
import itertools

import numpy as np
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200, help="number of epochs of training")
parser.add_argument("--batch_size", type=int, default=64, help="size of the batches")
parser.add_argument("--lr", type=float, default=0.0002, help="adam: learning rate")
parser.add_argument("--b1", type=float, default=0.5, help="adam: decay of first order momentum")
parser.add_argument("--b2", type=float, default=0.999, help="adam: decay of first order momentum")
parser.add_argument("--latent_dim", type=int, default=8, help="dimensionality of the latent space")
parser.add_argument("--code_dim", type=int, default=2, help="latent code")
parser.add_argument("--n_classes", type=int, default=4, help="number of classes for dataset")
parser.add_argument("--sample_interval", type=int, default=400, help="interval between samples")
opt = parser.parse_args()
print(opt)

nx, nh = 16, 32


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


def to_categorical(y, num_columns):
    """Returns one-hot encoded Variable"""
    y_cat = np.zeros((y.shape[0], num_columns))
    y_cat[range(y.shape[0]), y] = 1.0
    return FloatTensor(y_cat)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        input_dim = opt.latent_dim + opt.n_classes + opt.code_dim
        self.l1 = nn.Sequential(nn.Linear(input_dim, nh))
        self.blocks = nn.Sequential(
            nn.BatchNorm1d(nh, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nx),
            nn.Tanh(),
        )

    def forward(self, noise, labels, code):
        gen_input = torch.cat((noise, labels, code), -1)
        out = self.l1(gen_input)
        return self.blocks(out)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(
            nn.Linear(nx, nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Dropout(0.25),
            nn.BatchNorm1d(nh, 0.8),
        )
        self.adv_layer = nn.Sequential(nn.Linear(nh, 1))
        self.aux_layer = nn.Sequential(nn.Linear(nh, opt.n_classes), nn.Softmax())
        self.latent_layer = nn.Sequential(nn.Linear(nh, opt.code_dim))

    def forward(self, img):
        out = self.blocks(img)
        out = out.view(out.shape[0], -1)
        validity = self.adv_layer(out)
        label = self.aux_layer(out)
        latent_code = self.latent_layer(out)
        return validity, label, latent_code


adversarial_loss = torch.nn.MSELoss()
categorical_loss = torch.nn.CrossEntropyLoss()
continuous_loss = torch.nn.MSELoss()
lambda_cat = 1
lambda_con = 0.1
generator = Generator()
discriminator = Discriminator()
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(
        torch.rand(opt.batch_size * 10, nx), torch.randint(opt.n_classes, (opt.batch_size * 10,))
    ),
    batch_size=opt.batch_size,
    shuffle=True,
)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_info = torch.optim.Adam(
    itertools.chain(generator.parameters(), discriminator.parameters()),
    lr=opt.lr,
    betas=(opt.b1, opt.b2),
)
FloatTensor = torch.FloatTensor
LongTensor = torch.LongTensor
static_z = FloatTensor(np.zeros((opt.n_classes**2, opt.latent_dim)))
static_label = to_categorical(
    np.array([num for _ in range(opt.n_classes) for num in range(opt.n_classes)]),
    num_columns=opt.n_classes,
)
static_code = FloatTensor(np.zeros((opt.n_classes**2, opt.code_dim)))


def sample_image(n_row, batches_done):
    """A static grid, then one varying each code, as the script saves them."""
    z = FloatTensor(np.random.normal(0, 1, (n_row**2, opt.latent_dim)))
    static_sample = generator(z, static_label, static_code)
    torch.save(static_sample.data, "static_%d.pt" % batches_done)  # noqa: UP031 (as written)
    zeros = np.zeros((n_row**2, 1))
    c_varied = np.repeat(np.linspace(-1, 1, n_row)[:, np.newaxis], n_row, 0)
    c1 = FloatTensor(np.concatenate((c_varied, zeros), -1))
    c2 = FloatTensor(np.concatenate((zeros, c_varied), -1))
    sample1 = generator(static_z, static_label, c1)
    sample2 = generator(static_z, static_label, c2)
    torch.save(sample1.data, "varying_c1_%d.pt" % batches_done)  # noqa: UP031
    torch.save(sample2.data, "varying_c2_%d.pt" % batches_done)  # noqa: UP031


for epoch in range(opt.n_epochs):
    for i, (imgs, labels) in enumerate(dataloader):
        batch_size = imgs.shape[0]
        valid = FloatTensor(batch_size, 1).fill_(1.0)
        fake = FloatTensor(batch_size, 1).fill_(0.0)
        real_imgs = imgs.type(FloatTensor)
        labels = to_categorical(labels.numpy(), num_columns=opt.n_classes)

        #  Train Generator
        optimizer_G.zero_grad()
        z = FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim)))
        label_input = to_categorical(np.random.randint(0, opt.n_classes, batch_size), opt.n_classes)
        code_input = FloatTensor(np.random.uniform(-1, 1, (batch_size, opt.code_dim)))
        gen_imgs = generator(z, label_input, code_input)
        validity, _, _ = discriminator(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        real_pred, _, _ = discriminator(real_imgs)
        d_real_loss = adversarial_loss(real_pred, valid)
        fake_pred, _, _ = discriminator(gen_imgs.detach())
        d_fake_loss = adversarial_loss(fake_pred, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

        #  Information Loss
        optimizer_info.zero_grad()
        sampled_labels = np.random.randint(0, opt.n_classes, batch_size)
        gt_labels = LongTensor(sampled_labels)
        z = FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim)))
        label_input = to_categorical(sampled_labels, num_columns=opt.n_classes)
        code_input = FloatTensor(np.random.normal(-1, 1, (batch_size, opt.code_dim)))
        gen_imgs = generator(z, label_input, code_input)
        _, pred_label, pred_code = discriminator(gen_imgs)
        info_loss = lambda_cat * categorical_loss(pred_label, gt_labels) + lambda_con * (
            continuous_loss(pred_code, code_input)
        )
        info_loss.backward()
        optimizer_info.step()

        losses = (d_loss.item(), g_loss.item(), info_loss.item())
        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f] [info loss: %f]"  # noqa: UP031
            % (epoch, opt.n_epochs, i, len(dataloader), *losses)
        )
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            sample_image(n_row=opt.n_classes, batches_done=batches_done)
