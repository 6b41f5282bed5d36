# ruff: noqa: B905  (written as stylegan2-ada-pytorch writes it)
"""NVlabs/stylegan2-ada-pytorch's training loop as it is written (training/training_loop.py
and training/loss.py's StyleGAN2Loss, commit 375a436), on linear layers and random data:
G and D are built with requires_grad_(False) and each phase switches its module on and
off around its backward; phases Gboth, Dmain and Dreg (lazy R1, every 4th iteration)
over batch_gpu rounds; D forwards the fakes first; G_ema follows G. The loss is given
G.mapping and G.synthesis and calls them itself (run_G), never G, with loss.py's style
mixing where --style_mixing_prob > 0 (cifar's config: 0; the others': 0.9). Module-level
loop, no main guard."""

import argparse
import copy

import numpy as np
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--batch_gpu", type=int, default=16)
parser.add_argument("--r1_gamma", type=float, default=1.0)
parser.add_argument("--D_reg_interval", type=int, default=4)
parser.add_argument("--style_mixing_prob", type=float, default=0.0)  # cifar's; others' 0.9
parser.add_argument("--pl_weight", type=float, default=0.0)  # cifar's; the others' 2
parser.add_argument("--G_reg_interval", type=int, default=0)  # 0: None (phase Gboth)
args = parser.parse_args()

z_dim, w_dim, num_ws, nx, nh = 8, 8, 2, 16, 32


class MappingNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(z_dim, w_dim), nn.LeakyReLU(0.2))

    def forward(self, z, c):
        return self.fc(z).unsqueeze(1).repeat([1, num_ws, 1])  # ws: (n, num_ws, w_dim)


class SynthesisNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(num_ws * w_dim, nx)

    def forward(self, ws):
        return self.out(ws.flatten(1)).view(-1, 1, 4, 4)  # images: (n, 1, 4, 4)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.mapping = MappingNetwork()
        self.synthesis = SynthesisNetwork()

    def forward(self, z, c):
        ws = self.mapping(z, c)
        return self.synthesis(ws)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(nx, nh), nn.LeakyReLU(0.2), nn.Linear(nh, 1))

    def forward(self, img, c):
        return self.model(img.flatten(1))


class StyleGAN2Loss:
    def __init__(self, G_mapping, G_synthesis, D, style_mixing_prob, r1_gamma, pl_weight,
                 pl_batch_shrink=2, pl_decay=0.01):  # fmt: skip
        self.G_mapping, self.G_synthesis, self.D = G_mapping, G_synthesis, D
        self.style_mixing_prob, self.r1_gamma = style_mixing_prob, r1_gamma
        self.pl_batch_shrink, self.pl_decay, self.pl_weight = pl_batch_shrink, pl_decay, pl_weight
        self.pl_mean = torch.zeros([])

    def run_G(self, z, c):
        ws = self.G_mapping(z, c)
        if self.style_mixing_prob > 0:
            cutoff = torch.empty([], dtype=torch.int64, device=ws.device).random_(1, ws.shape[1])
            cutoff = torch.where(torch.rand([], device=ws.device) < self.style_mixing_prob,
                                 cutoff, torch.full_like(cutoff, ws.shape[1]))  # fmt: skip
            ws[:, cutoff:] = self.G_mapping(torch.randn_like(z), c)[:, cutoff:]
        img = self.G_synthesis(ws)
        return img, ws

    def accumulate_gradients(self, phase, real_img, real_c, gen_z, gen_c, gain):
        do_Gmain = phase in ["Gmain", "Gboth"]
        do_Dmain = phase in ["Dmain", "Dboth"]
        do_Gpl = phase in ["Greg", "Gboth"] and (self.pl_weight != 0)
        do_Dr1 = phase in ["Dreg", "Dboth"] and (self.r1_gamma != 0)
        if do_Gmain:
            gen_img, _gen_ws = self.run_G(gen_z, gen_c)
            gen_logits = self.D(gen_img, gen_c)
            loss_Gmain = torch.nn.functional.softplus(-gen_logits)
            loss_Gmain.mean().mul(gain).backward()
        if do_Gpl:
            batch_size = gen_z.shape[0] // self.pl_batch_shrink
            gen_img, gen_ws = self.run_G(gen_z[:batch_size], gen_c[:batch_size])
            pl_noise = torch.randn_like(gen_img) / np.sqrt(gen_img.shape[2] * gen_img.shape[3])
            (pl_grads,) = torch.autograd.grad(outputs=[(gen_img * pl_noise).sum()],
                                              inputs=[gen_ws], create_graph=True,
                                              only_inputs=True)  # fmt: skip
            pl_lengths = pl_grads.square().sum(2).mean(1).sqrt()
            pl_mean = self.pl_mean.lerp(pl_lengths.mean(), self.pl_decay)
            self.pl_mean.copy_(pl_mean.detach())
            pl_penalty = (pl_lengths - pl_mean).square()
            loss_Gpl = pl_penalty * self.pl_weight
            (gen_img[:, 0, 0, 0] * 0 + loss_Gpl).mean().mul(gain).backward()
        loss_Dgen = 0
        if do_Dmain:
            gen_img, _gen_ws = self.run_G(gen_z, gen_c)
            gen_logits = self.D(gen_img, gen_c)
            loss_Dgen = torch.nn.functional.softplus(gen_logits)
            loss_Dgen.mean().mul(gain).backward()
        if do_Dmain or do_Dr1:
            real_img_tmp = real_img.detach().requires_grad_(do_Dr1)
            real_logits = self.D(real_img_tmp, real_c)
            loss_Dreal = 0
            if do_Dmain:
                loss_Dreal = torch.nn.functional.softplus(-real_logits)
            loss_Dr1 = 0
            if do_Dr1:
                (r1_grads,) = torch.autograd.grad(outputs=[real_logits.sum()],
                                                  inputs=[real_img_tmp], create_graph=True,
                                                  only_inputs=True)  # fmt: skip
                r1_penalty = r1_grads.square().sum([1, 2, 3])
                loss_Dr1 = r1_penalty * (self.r1_gamma / 2)
            (real_logits * 0 + loss_Dreal + loss_Dr1).mean().mul(gain).backward()


G = Generator().train().requires_grad_(False)
D = Discriminator().train().requires_grad_(False)
G_ema = copy.deepcopy(G).eval()
loss = StyleGAN2Loss(G.mapping, G.synthesis, D, args.style_mixing_prob, args.r1_gamma,
                     args.pl_weight)  # fmt: skip
# one optimizer per module, shared by its main and reg phases (training_loop.py builds
# `opt` once and gives it to both name+'main' and name+'reg')
phases = []
for name, module, reg_interval in [("G", G, args.G_reg_interval or None),
                                   ("D", D, args.D_reg_interval)]:  # fmt: skip
    if reg_interval is None:
        opt = torch.optim.Adam(module.parameters(), lr=0.0025, betas=(0.0, 0.99))
        phases += [dict(name=name + "both", module=module, opt=opt, interval=1)]
    else:
        mb_ratio = reg_interval / (reg_interval + 1)
        opt = torch.optim.Adam(module.parameters(), lr=0.0025 * mb_ratio,
                               betas=[beta**mb_ratio for beta in (0.0, 0.99)])  # fmt: skip
        phases += [dict(name=name + "main", module=module, opt=opt, interval=1)]
        phases += [dict(name=name + "reg", module=module, opt=opt, interval=reg_interval)]
data = torch.rand(args.batch * 40, 1, 4, 4)
batch_idx = 0
while True:
    phase_real_img = data[torch.randint(len(data), (args.batch,))].split(args.batch_gpu)
    # an unconditional dataset's labels: zero columns (get_label gives np.zeros([0]))
    phase_real_c = torch.zeros(args.batch, 0).split(args.batch_gpu)
    all_gen_z = torch.randn([len(phases) * args.batch, z_dim])
    all_gen_z = [phase_gen_z.split(args.batch_gpu) for phase_gen_z in all_gen_z.split(args.batch)]
    all_gen_c = torch.zeros(len(phases) * args.batch, 0)
    all_gen_c = [phase_gen_c.split(args.batch_gpu) for phase_gen_c in all_gen_c.split(args.batch)]
    for phase, phase_gen_z, phase_gen_c in zip(phases, all_gen_z, all_gen_c):
        if batch_idx % phase["interval"] != 0:
            continue
        phase["opt"].zero_grad(set_to_none=True)
        phase["module"].requires_grad_(True)
        for real_img, real_c, gen_z, gen_c in zip(phase_real_img, phase_real_c, phase_gen_z,
                                                  phase_gen_c):  # fmt: skip
            loss.accumulate_gradients(phase=phase["name"], real_img=real_img, real_c=real_c,
                                      gen_z=gen_z, gen_c=gen_c, gain=phase["interval"])  # fmt: skip
        phase["module"].requires_grad_(False)
        for param in phase["module"].parameters():
            if param.grad is not None:
                torch.nan_to_num(param.grad, nan=0, posinf=1e5, neginf=-1e5, out=param.grad)
        phase["opt"].step()
    with torch.no_grad():
        for p_ema, p in zip(G_ema.parameters(), G.parameters()):
            p_ema.copy_(p.lerp(p_ema, 0.999))
    batch_idx += 1
    print("batch", batch_idx)
