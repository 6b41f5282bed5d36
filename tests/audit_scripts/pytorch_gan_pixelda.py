"""PyTorch-GAN's implementations/pixelda/pixelda.py loop (commit e0a8f3c) on random data, as
the script writes it: module-level argparse and loop, no main guard; pixel-level domain
adaptation. generator(img, z) turns a source image (grey, expanded to three channels) and
uniform noise into a target-domain image; a PatchGAN D with InstanceNorm judges it against
the target loader's images; a classifier (ending in nn.Softmax, then CrossEntropyLoss, as
written) is trained by optimizer_G beside G on the source labels, on the translated image
and on the source image. G first on MSE(D(fake_B), 1) + 0.1 * task loss; then D on the
target images and fake_B detached, the mean of its two MSEs. Smaller layers than its 64
channels, 32x32 images as its own; no accuracy history or sample grid."""

import argparse
import itertools

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--b1", type=float, default=0.5)
parser.add_argument("--b2", type=float, default=0.999)
parser.add_argument("--n_residual_blocks", type=int, default=2)
parser.add_argument("--latent_dim", type=int, default=4)
parser.add_argument("--img_size", type=int, default=32)
parser.add_argument("--channels", type=int, default=3)
parser.add_argument("--n_classes", type=int, default=10)
opt = parser.parse_args()

# Calculate output of image discriminator (PatchGAN)
patch = int(opt.img_size / 2**4)
patch = (1, patch, patch)

cuda = False


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


class ResidualBlock(nn.Module):
    def __init__(self, in_features=8, out_features=8):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_features, in_features, 3, 1, 1),
            nn.BatchNorm2d(in_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_features, in_features, 3, 1, 1),
            nn.BatchNorm2d(in_features),
        )

    def forward(self, x):
        return x + self.block(x)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        # Fully-connected layer which constructs image channel shaped output from noise
        self.fc = nn.Linear(opt.latent_dim, opt.channels * opt.img_size**2)
        self.l1 = nn.Sequential(nn.Conv2d(opt.channels * 2, 8, 3, 1, 1), nn.ReLU(inplace=True))
        resblocks = []
        for _ in range(opt.n_residual_blocks):
            resblocks.append(ResidualBlock())
        self.resblocks = nn.Sequential(*resblocks)
        self.l2 = nn.Sequential(nn.Conv2d(8, opt.channels, 3, 1, 1), nn.Tanh())

    def forward(self, img, z):
        gen_input = torch.cat((img, self.fc(z).view(*img.shape)), 1)
        out = self.l1(gen_input)
        out = self.resblocks(out)
        img_ = self.l2(out)
        return img_


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()

        def block(in_features, out_features, normalization=True):
            """Discriminator block"""
            layers = [
                nn.Conv2d(in_features, out_features, 3, stride=2, padding=1),
                nn.LeakyReLU(0.2, inplace=True),
            ]
            if normalization:
                layers.append(nn.InstanceNorm2d(out_features))
            return layers

        self.model = nn.Sequential(
            *block(opt.channels, 8, normalization=False),
            *block(8, 16),
            *block(16, 16),
            *block(16, 16),
            nn.Conv2d(16, 1, 3, 1, 1),
        )

    def forward(self, img):
        validity = self.model(img)
        return validity


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()

        def block(in_features, out_features, normalization=True):
            """Classifier block"""
            layers = [
                nn.Conv2d(in_features, out_features, 3, stride=2, padding=1),
                nn.LeakyReLU(0.2, inplace=True),
            ]
            if normalization:
                layers.append(nn.InstanceNorm2d(out_features))
            return layers

        self.model = nn.Sequential(
            *block(opt.channels, 8, normalization=False),
            *block(8, 16),
            *block(16, 16),
            *block(16, 16),
        )
        input_size = opt.img_size // 2**4
        self.output_layer = nn.Sequential(
            nn.Linear(16 * input_size**2, opt.n_classes), nn.Softmax()
        )

    def forward(self, img):
        feature_repr = self.model(img)
        feature_repr = feature_repr.view(feature_repr.size(0), -1)
        label = self.output_layer(feature_repr)
        return label


# Loss function
adversarial_loss = torch.nn.MSELoss()
task_loss = torch.nn.CrossEntropyLoss()

# Loss weights
lambda_adv = 1
lambda_task = 0.1

generator = Generator()
discriminator = Discriminator()
classifier = Classifier()
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
classifier.apply(weights_init_normal)

source = torch.rand(80, 1, opt.img_size, opt.img_size) * 2 - 1
target = torch.rand(80, 3, opt.img_size, opt.img_size) * 2 - 1
dataloader_A = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(source, torch.randint(opt.n_classes, (80,))),
    batch_size=opt.batch_size,
    shuffle=True,
)
dataloader_B = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(target, torch.randint(opt.n_classes, (80,))),
    batch_size=opt.batch_size,
    shuffle=True,
)

optimizer_G = torch.optim.Adam(
    itertools.chain(generator.parameters(), classifier.parameters()),
    lr=opt.lr,
    betas=(opt.b1, opt.b2),
)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))

FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor

for epoch in range(opt.n_epochs):
    for i, ((imgs_A, labels_A), (imgs_B, labels_B)) in enumerate(
        zip(dataloader_A, dataloader_B)  # noqa: B905
    ):
        batch_size = imgs_A.size(0)

        # Adversarial ground truths
        valid = Variable(FloatTensor(batch_size, *patch).fill_(1.0), requires_grad=False)
        fake = Variable(FloatTensor(batch_size, *patch).fill_(0.0), requires_grad=False)

        # Configure input
        imgs_A = Variable(
            imgs_A.type(FloatTensor).expand(batch_size, 3, opt.img_size, opt.img_size)
        )
        labels_A = Variable(labels_A.type(LongTensor))
        imgs_B = Variable(imgs_B.type(FloatTensor))

        #  Train Generator
        optimizer_G.zero_grad()

        # Sample noise
        z = Variable(FloatTensor(np.random.uniform(-1, 1, (batch_size, opt.latent_dim))))

        # Generate a batch of images
        fake_B = generator(imgs_A, z)

        # Perform task on translated source image
        label_pred = classifier(fake_B)

        # Calculate the task loss
        task_loss_ = (task_loss(label_pred, labels_A) + task_loss(classifier(imgs_A), labels_A)) / 2

        # Loss measures generator's ability to fool the discriminator
        g_loss = (
            lambda_adv * adversarial_loss(discriminator(fake_B), valid) + lambda_task * task_loss_
        )

        g_loss.backward()
        optimizer_G.step()

        #  Train Discriminator
        optimizer_D.zero_grad()

        # Measure discriminator's ability to classify real from generated samples
        real_loss = adversarial_loss(discriminator(imgs_B), valid)
        fake_loss = adversarial_loss(discriminator(fake_B.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2

        d_loss.backward()
        optimizer_D.step()

        # Evaluate performance on Domain B
        pred_B = classifier(imgs_B)
        target_acc = np.mean(np.argmax(pred_B.data.cpu().numpy(), axis=1) == labels_B.numpy())
        print(
            "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f] [target_acc: %3d%%]"  # noqa: UP031 (as written)
            % (
                epoch,
                opt.n_epochs,
                i,
                len(dataloader_A),
                d_loss.item(),
                g_loss.item(),
                100 * target_acc,
            )
        )
