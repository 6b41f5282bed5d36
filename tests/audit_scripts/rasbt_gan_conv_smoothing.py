# ruff: noqa: UP008, UP031  (written as the notebook writes it)
"""rasbt/deeplearning-models pytorch_ipynb/gan/gan-conv-smoothing.ipynb, its cells in
order, made small: 8x8 one-channel images, narrow layers, random images in place of
MNIST, 2 epochs of 4 batches. Label smoothing in both steps: G's loss and D's real loss
are BCE with logits against valid*0.9; G's step first, then D's on the same fakes,
detached, D's loss halved. Its discriminator_forward reads the global model, as written."""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

##########################
### SETTINGS
##########################

# Device
device = torch.device("cpu")

# Hyperparameters
random_seed = 123
generator_learning_rate = 0.0001
discriminator_learning_rate = 0.0001
num_epochs = 2
BATCH_SIZE = 8
LATENT_DIM = 10
IMG_SHAPE = (1, 8, 8)
IMG_SIZE = 1
for x in IMG_SHAPE:
    IMG_SIZE *= x

##########################
### MNIST DATASET (random images in [0, 1), as ToTensor gives them)
##########################

torch.manual_seed(random_seed)
train_dataset = TensorDataset(torch.rand(32, *IMG_SHAPE), torch.randint(10, (32,)))
train_loader = DataLoader(dataset=train_dataset, batch_size=BATCH_SIZE, shuffle=True)


##########################
### MODEL
##########################


class Flatten(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), -1)


class Reshape1(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), 8, 2, 2)


class GAN(torch.nn.Module):
    def __init__(self):
        super(GAN, self).__init__()

        self.generator = nn.Sequential(
            nn.Linear(LATENT_DIM, 32, bias=False),
            nn.BatchNorm1d(num_features=32),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            Reshape1(),
            nn.ConvTranspose2d(
                in_channels=8,
                out_channels=4,
                kernel_size=(2, 2),
                stride=(2, 2),
                padding=0,
                bias=False,
            ),
            nn.BatchNorm2d(num_features=4),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            nn.ConvTranspose2d(
                in_channels=4,
                out_channels=1,
                kernel_size=(2, 2),
                stride=(2, 2),
                padding=0,
                bias=False,
            ),
            nn.Tanh(),
        )

        self.discriminator = nn.Sequential(
            nn.Conv2d(
                in_channels=1,
                out_channels=4,
                padding=1,
                kernel_size=(3, 3),
                stride=(2, 2),
                bias=False,
            ),
            nn.BatchNorm2d(num_features=4),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            nn.Conv2d(
                in_channels=4,
                out_channels=8,
                padding=1,
                kernel_size=(3, 3),
                stride=(2, 2),
                bias=False,
            ),
            nn.BatchNorm2d(num_features=8),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            Flatten(),
            nn.Linear(2 * 2 * 8, 1),
        )

    def generator_forward(self, z):
        img = self.generator(z)
        return img

    def discriminator_forward(self, img):
        pred = model.discriminator(img)
        return pred.view(-1)


torch.manual_seed(random_seed)

model = GAN()
model = model.to(device)

optim_gener = torch.optim.Adam(model.generator.parameters(), lr=generator_learning_rate)
optim_discr = torch.optim.Adam(model.discriminator.parameters(), lr=discriminator_learning_rate)

##########################
### TRAINING
##########################

start_time = time.time()

discr_costs = []
gener_costs = []
for epoch in range(num_epochs):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):
        # Normalize images to [-1, 1] range
        features = (features - 0.5) * 2.0
        features = features.view(-1, IMG_SIZE).to(device)

        targets = targets.to(device)

        valid = torch.ones(targets.size(0)).float().to(device)
        fake = torch.zeros(targets.size(0)).float().to(device)

        ### FORWARD AND BACK PROP

        # --------------------------
        # Train Generator
        # --------------------------

        # Make new images
        z = torch.zeros((targets.size(0), LATENT_DIM)).uniform_(-1.0, 1.0).to(device)
        generated_features = model.generator_forward(z)

        # Loss for fooling the discriminator
        discr_pred = model.discriminator_forward(generated_features.view(targets.size(0), 1, 8, 8))

        gener_loss = F.binary_cross_entropy_with_logits(discr_pred, valid * 0.9)

        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()

        # --------------------------
        # Train Discriminator
        # --------------------------

        discr_pred_real = model.discriminator_forward(features.view(targets.size(0), 1, 8, 8))
        real_loss = F.binary_cross_entropy_with_logits(discr_pred_real, valid * 0.9)

        discr_pred_fake = model.discriminator_forward(
            generated_features.view(targets.size(0), 1, 8, 8).detach()
        )
        fake_loss = F.binary_cross_entropy_with_logits(discr_pred_fake, fake)

        discr_loss = 0.5 * (real_loss + fake_loss)

        optim_discr.zero_grad()
        discr_loss.backward()
        optim_discr.step()

        discr_costs.append(discr_loss.item())
        gener_costs.append(gener_loss.item())

        ### LOGGING
        if not batch_idx % 100:
            print(
                "Epoch: %03d/%03d | Batch %03d/%03d | Gen/Dis Loss: %.4f/%.4f"
                % (epoch + 1, num_epochs, batch_idx, len(train_loader), gener_loss, discr_loss)
            )

    print("Time elapsed: %.2f min" % ((time.time() - start_time) / 60))

print("Total Training Time: %.2f min" % ((time.time() - start_time) / 60))
