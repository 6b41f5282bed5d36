# ruff: noqa: B007, E501, F841  (written as EmilienDupont/wgan-gp writes it)
"""EmilienDupont/wgan-gp: its training.py Trainer as written (losses kept, the prints,
print_every and use_cuda branches left out), with small MLP models of its models.py's
interface (sample_latent) and random points in place of its MNIST loader. Per batch a
critic step (G's samples with G's graph, the penalty's norm as
torch.sqrt(torch.sum(gradients ** 2, dim=1) + 1e-12)), and a G step every
critic_iterations-th batch (num_steps % critic_iterations == 0)."""

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import grad as torch_grad


class Generator(nn.Module):
    def __init__(self, latent_dim=8):
        super().__init__()
        self.latent_dim = latent_dim
        self.net = nn.Sequential(nn.Linear(latent_dim, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, input_data):
        return self.net(input_data)

    def sample_latent(self, num_samples):
        return torch.randn((num_samples, self.latent_dim))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, input_data):
        return self.net(input_data)


class Trainer:
    def __init__(
        self,
        generator,
        discriminator,
        gen_optimizer,
        dis_optimizer,
        gp_weight=10,
        critic_iterations=5,
        print_every=50,
        use_cuda=False,
    ):
        self.G = generator
        self.G_opt = gen_optimizer
        self.D = discriminator
        self.D_opt = dis_optimizer
        self.losses = {"G": [], "D": [], "GP": [], "gradient_norm": []}
        self.num_steps = 0
        self.use_cuda = use_cuda
        self.gp_weight = gp_weight
        self.critic_iterations = critic_iterations
        self.print_every = print_every

    def _critic_train_iteration(self, data):
        batch_size = data.size()[0]
        generated_data = self.sample_generator(batch_size)
        d_real = self.D(data)
        d_generated = self.D(generated_data)
        gradient_penalty = self._gradient_penalty(data, generated_data)
        self.losses["GP"].append(gradient_penalty.item())
        self.D_opt.zero_grad()
        d_loss = d_generated.mean() - d_real.mean() + gradient_penalty
        d_loss.backward()
        self.D_opt.step()
        self.losses["D"].append(d_loss.item())

    def _generator_train_iteration(self, data):
        self.G_opt.zero_grad()
        batch_size = data.size()[0]
        generated_data = self.sample_generator(batch_size)
        d_generated = self.D(generated_data)
        g_loss = -d_generated.mean()
        g_loss.backward()
        self.G_opt.step()
        self.losses["G"].append(g_loss.item())

    def _gradient_penalty(self, real_data, generated_data):
        batch_size = real_data.size()[0]
        alpha = torch.rand(batch_size, 1)
        alpha = alpha.expand_as(real_data)
        interpolated = alpha * real_data.data + (1 - alpha) * generated_data.data
        interpolated.requires_grad_(True)
        prob_interpolated = self.D(interpolated)
        gradients = torch_grad(
            outputs=prob_interpolated,
            inputs=interpolated,
            grad_outputs=torch.ones(prob_interpolated.size()),
            create_graph=True,
            retain_graph=True,
        )[0]
        gradients = gradients.view(batch_size, -1)
        self.losses["gradient_norm"].append(gradients.norm(2, dim=1).mean().item())
        gradients_norm = torch.sqrt(torch.sum(gradients**2, dim=1) + 1e-12)
        return self.gp_weight * ((gradients_norm - 1) ** 2).mean()

    def _train_epoch(self, data_loader):
        for i, data in enumerate(data_loader):
            self.num_steps += 1
            self._critic_train_iteration(data[0])
            if self.num_steps % self.critic_iterations == 0:
                self._generator_train_iteration(data[0])

    def train(self, data_loader, epochs):
        for epoch in range(epochs):
            self._train_epoch(data_loader)

    def sample_generator(self, num_samples):
        latent_samples = self.G.sample_latent(num_samples)
        return self.G(latent_samples)


torch.manual_seed(0)
generator = Generator()
discriminator = Discriminator()
G_optimizer = optim.Adam(generator.parameters(), lr=1e-4, betas=(0.9, 0.99))
D_optimizer = optim.Adam(discriminator.parameters(), lr=1e-4, betas=(0.9, 0.99))
data = torch.randn(640, 2) * 0.5 + 1
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(data, torch.zeros(640)), batch_size=32, shuffle=True
)
trainer = Trainer(generator, discriminator, G_optimizer, D_optimizer)
trainer.train(loader, 2)
