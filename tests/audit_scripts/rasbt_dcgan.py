# ruff: noqa: UP031  (written as stat453's helper_train.py writes it)
"""rasbt/stat453-deep-learning-ss21 L18/helper_train.py: train_gan_v1, with the DCGAN
model class of L18/04_02_dcgan-celeba.ipynb (one module holding G and D, called through
generator_forward and discriminator_forward), made small: 8x8 one-channel images, narrow
layers, random images in place of CelebA, without its logging of accuracies and image
grids. F.binary_cross_entropy_with_logits on D's logits, D's loss halved, G's step on
the D step's fakes with flipped labels."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class DCGAN(torch.nn.Module):
    def __init__(self, latent_dim=8, num_feat_maps_gen=8, num_feat_maps_dis=8, color_channels=1):
        super().__init__()

        self.generator = nn.Sequential(
            nn.ConvTranspose2d(
                latent_dim, num_feat_maps_gen * 2, kernel_size=4, stride=1, padding=0, bias=False
            ),
            nn.BatchNorm2d(num_feat_maps_gen * 2),
            nn.LeakyReLU(inplace=True),
            nn.ConvTranspose2d(
                num_feat_maps_gen * 2,
                color_channels,
                kernel_size=4,
                stride=2,
                padding=1,
                bias=False,
            ),
            nn.Tanh(),
        )

        self.discriminator = nn.Sequential(
            nn.Conv2d(color_channels, num_feat_maps_dis, kernel_size=4, stride=2, padding=1),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(
                num_feat_maps_dis,
                num_feat_maps_dis * 2,
                kernel_size=4,
                stride=2,
                padding=1,
                bias=False,
            ),
            nn.BatchNorm2d(num_feat_maps_dis * 2),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(num_feat_maps_dis * 2, 1, kernel_size=2, stride=1, padding=0),
            nn.Flatten(),
        )

    def generator_forward(self, z):
        img = self.generator(z)
        return img

    def discriminator_forward(self, img):
        logits = self.discriminator(img)
        return logits


def train_gan_v1(
    num_epochs,
    model,
    optimizer_gen,
    optimizer_discr,
    latent_dim,
    device,
    train_loader,
    loss_fn=None,
    logging_interval=100,
):
    log_dict = {"train_generator_loss_per_batch": [], "train_discriminator_loss_per_batch": []}

    if loss_fn is None:
        loss_fn = F.binary_cross_entropy_with_logits

    for epoch in range(num_epochs):
        model.train()
        for batch_idx, (features, _) in enumerate(train_loader):
            batch_size = features.size(0)

            # real images
            real_images = features.to(device)
            real_labels = torch.ones(batch_size, device=device)  # real label = 1

            # generated (fake) images
            noise = torch.randn(batch_size, latent_dim, 1, 1, device=device)  # format NCHW
            fake_images = model.generator_forward(noise)
            fake_labels = torch.zeros(batch_size, device=device)  # fake label = 0
            flipped_fake_labels = real_labels  # here, fake label = 1

            # --------------------------
            # Train Discriminator
            # --------------------------

            optimizer_discr.zero_grad()

            # get discriminator loss on real images
            discr_pred_real = model.discriminator_forward(real_images).view(-1)  # Nx1 -> N
            real_loss = loss_fn(discr_pred_real, real_labels)

            # get discriminator loss on fake images
            discr_pred_fake = model.discriminator_forward(fake_images.detach()).view(-1)
            fake_loss = loss_fn(discr_pred_fake, fake_labels)

            # combined loss
            discr_loss = 0.5 * (real_loss + fake_loss)
            discr_loss.backward()

            optimizer_discr.step()

            # --------------------------
            # Train Generator
            # --------------------------

            optimizer_gen.zero_grad()

            # get discriminator loss on fake images with flipped labels
            discr_pred_fake = model.discriminator_forward(fake_images).view(-1)
            gener_loss = loss_fn(discr_pred_fake, flipped_fake_labels)
            gener_loss.backward()

            optimizer_gen.step()

            log_dict["train_generator_loss_per_batch"].append(gener_loss.item())
            log_dict["train_discriminator_loss_per_batch"].append(discr_loss.item())

            if not batch_idx % logging_interval:
                print(
                    "Epoch: %03d/%03d | Batch %03d/%03d | Gen/Dis Loss: %.4f/%.4f"
                    % (
                        epoch + 1,
                        num_epochs,
                        batch_idx,
                        len(train_loader),
                        gener_loss.item(),
                        discr_loss.item(),
                    )
                )

    return log_dict


torch.manual_seed(123)
data = torch.rand(32, 1, 8, 8) * 2 - 1
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.zeros(32)), batch_size=8, shuffle=True
)
model = DCGAN()
optim_gen = torch.optim.Adam(model.generator.parameters(), betas=(0.5, 0.999), lr=0.0002)
optim_discr = torch.optim.Adam(model.discriminator.parameters(), betas=(0.5, 0.999), lr=0.0002)
log_dict = train_gan_v1(
    num_epochs=2,
    model=model,
    optimizer_gen=optim_gen,
    optimizer_discr=optim_discr,
    latent_dim=8,
    device="cpu",
    train_loader=train_loader,
)
