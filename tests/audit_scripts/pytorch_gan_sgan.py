"""PyTorch-GAN's implementations/sgan/sgan.py loop (commit c5d6be1) on random data, as
the script writes it: module-level argparse and loop, no main guard; z drawn with numpy;
an unconditional G(noise) that still builds a label embedding it never calls; D(img)
with Dropout and BatchNorm(eps 0.8) returning (validity through a Sigmoid, num_classes + 1
class probabilities through a Softmax); BCELoss on the validity and CrossEntropyLoss on
the Softmax's output; G first on the validity alone, then D on the real batch with its
labels and on gen_imgs.detach() with the extra class num_classes (fake_aux_gt),
((adv + aux) / 2 + (adv + aux) / 2) / 2; D's accuracy from numpy; the first 25 fakes
saved every sample_interval batches. Linear layers stand for its convolutions."""

import argparse

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
parser.add_argument("--num_classes", type=int, default=4, help="number of classes for dataset")
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


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.label_emb = nn.Embedding(opt.num_classes, opt.latent_dim)
        self.l1 = nn.Sequential(nn.Linear(opt.latent_dim, nh))
        self.blocks = nn.Sequential(
            nn.BatchNorm1d(nh),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nh),
            nn.BatchNorm1d(nh, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(nh, nx),
            nn.Tanh(),
        )

    def forward(self, noise):
        out = self.l1(noise)
        return self.blocks(out)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()

        def discriminator_block(in_filters, out_filters, bn=True):
            """Returns layers of each discriminator block"""
            block = [
                nn.Linear(in_filters, out_filters),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Dropout(0.25),
            ]
            if bn:
                block.append(nn.BatchNorm1d(out_filters, 0.8))
            return block

        self.blocks = nn.Sequential(
            *discriminator_block(nx, nh, bn=False),
            *discriminator_block(nh, nh),
        )
        self.adv_layer = nn.Sequential(nn.Linear(nh, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(nh, opt.num_classes + 1), nn.Softmax())

    def forward(self, img):
        out = self.blocks(img)
        out = out.view(out.shape[0], -1)
        validity = self.adv_layer(out)
        label = self.aux_layer(out)
        return validity, label


adversarial_loss = torch.nn.BCELoss()
auxiliary_loss = torch.nn.CrossEntropyLoss()
generator = Generator()
discriminator = Discriminator()
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(
        torch.rand(opt.batch_size * 10, nx), torch.randint(opt.num_classes, (opt.batch_size * 10,))
    ),
    batch_size=opt.batch_size,
    shuffle=True,
)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
FloatTensor = torch.FloatTensor
LongTensor = torch.LongTensor

for epoch in range(opt.n_epochs):
    for i, (imgs, labels) in enumerate(dataloader):
        batch_size = imgs.shape[0]
        valid = FloatTensor(batch_size, 1).fill_(1.0)
        fake = FloatTensor(batch_size, 1).fill_(0.0)
        fake_aux_gt = LongTensor(batch_size).fill_(opt.num_classes)
        real_imgs = imgs.type(FloatTensor)
        labels = labels.type(LongTensor)

        #  Train Generator
        optimizer_G.zero_grad()
        z = FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim)))
        gen_imgs = generator(z)
        validity, _ = discriminator(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()
        real_pred, real_aux = discriminator(real_imgs)
        d_real_loss = (adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)) / 2
        fake_pred, fake_aux = discriminator(gen_imgs.detach())
        d_fake_loss = (
            adversarial_loss(fake_pred, fake) + auxiliary_loss(fake_aux, fake_aux_gt)
        ) / 2
        d_loss = (d_real_loss + d_fake_loss) / 2
        pred = np.concatenate([real_aux.data.cpu().numpy(), fake_aux.data.cpu().numpy()], axis=0)
        gt = np.concatenate([labels.data.cpu().numpy(), fake_aux_gt.data.cpu().numpy()], axis=0)
        d_acc = np.mean(np.argmax(pred, axis=1) == gt)
        d_loss.backward()
        optimizer_D.step()

        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f, acc: %d%%] [G loss: %f]"  # noqa: UP031
            % (epoch, opt.n_epochs, i, len(dataloader), d_loss.item(), 100 * d_acc, g_loss.item())
        )
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            torch.save(gen_imgs.data[:25], "images_%d.pt" % batches_done)  # noqa: UP031
