# ruff: noqa: B007  (written as the wild writes it)
"""A GAN loop written as Accelerate's README writes a training loop (huggingface/accelerate
README.md: ``device = accelerator.device``, ``model, optimizer, data =
accelerator.prepare(model, optimizer, data)``, ``accelerator.backward(loss)`` in place of
``loss.backward()``), with G and D and their optimizers all given to ``prepare``: D's step
on the real batch and the detached fakes, then G's on the same fakes, with
``nn.BCEWithLogitsLoss``; small MLPs on 2-D points, on the CPU."""

import torch
from accelerate import Accelerator
from torch import nn

accelerator = Accelerator(cpu=True)
device = accelerator.device
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
D = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1)).to(device)
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
data = torch.utils.data.DataLoader(torch.randn(256, 2) * 0.5 + 1, batch_size=32, shuffle=True)
G, D, opt_g, opt_d, data = accelerator.prepare(G, D, opt_g, opt_d, data)
criterion = nn.BCEWithLogitsLoss()

G.train()
D.train()
for epoch in range(2):
    for real in data:
        real = real.to(device)
        b = real.size(0)
        z = torch.randn(b, 8, device=device)
        fake = G(z)
        opt_d.zero_grad()
        d_loss = criterion(D(real), torch.ones(b, 1, device=device)) + criterion(
            D(fake.detach()), torch.zeros(b, 1, device=device)
        )
        accelerator.backward(d_loss)
        opt_d.step()
        opt_g.zero_grad()
        g_loss = criterion(D(fake), torch.ones(b, 1, device=device))
        accelerator.backward(g_loss)
        opt_g.step()
