"""The hand-written GAN loops of the wild, kept as written, as oracles for ganstep.

Each loop is a plain function ``loop(G, D, opt_g, opt_d, batches, latent, objective)``
that trains for ``len(batches)`` iterations (``len(batches) // d_steps`` where a loop
takes several batches per iteration), draws z only through ``latent(n)``, and returns
one dict of Python floats per iteration (``loss_d``, ``loss_g``, and ``k`` for BEGAN).
They waste passes on purpose: that is what ganstep is measured against.

Losses are written here the way tutorials write them (BCE against ones and zeros,
``L1Loss``, ``log(sum(exp))``), independently of :mod:`ganstep.engine.objectives`, so the
equivalence tests compare two implementations. Where a post divides D's loss by 2,
the loops here use the definitions of :mod:`ganstep.engine.objectives` instead (a loss
scale is not the update order), and a single ``backward`` for D's loss (the DCGAN
example's two ``backward`` calls sum to the same gradient for separable losses,
and softmax and WGAN-GP are not separable).

The loops of the five blog posts that started ganstep are named after their post:

- ``which_first_post_*``: "GAN 훈련 G부터? D부터?" (GAN training: G first or D first?),
  on BEGAN's speed in either order;
- ``backward_memo_*``: "loss.backward 원리 메모" (how loss.backward works: a memo), four
  ways to write a D-first step;
- ``softmaxgan_graph_*``: "Pytorch 모델 그래프 구조" (a PyTorch model's graph), SoftmaxGAN's
  loop and three fixes;
- ``detach_or_retain_*``: an English post on ``detach()`` against
  ``backward(retain_graph=True)`` in two GAN codebases, three strategies;
- "PyTorch로 GAN을 만들 때 detach()를 사용하는 이유" (why GAN code calls detach(),
  https://redstarhong.tistory.com/64) walks through the DCGAN tutorial's loop:
  ``dcgan_example``.

================================ =============================== =============================
loop                             source                          ganstep schedule
================================ =============================== =============================
``dcgan_example``                pytorch/examples dcgan; the     ``d_first()``
                                 backward memo's way 3,
                                 detach-or-retain strategy 2,
                                 the detach post
``pytorch_gan_g_first``          PyTorch-GAN's scripts;          ``simultaneous()``
                                 detach-or-retain strategy 3
``lightning_g_first``            Lightning's GAN example         ``g_first(reuse_z=True)``
``lightning_gan_example``        Lightning's GAN example, its    ``g_first(reuse_z=True)``,
                                 BCE with logits and D's loss    ``NS(bce_with_logits=True)``
                                 halved as it writes them
``backward_memo_way1``           way 1 (fresh z for G)           ``d_first(reuse_fake=False)``
``backward_memo_way2``           way 2 (G forwarded twice)       ``d_first()``
``backward_memo_way3``           way 3 (``detach``)              ``d_first()``
``backward_memo_way4``           way 4 (``retain_graph``)        ``d_first()``
``softmaxgan_graph_original``    the first SoftmaxGAN loop       raises (in-place)
``softmaxgan_graph_fix1/2``      fixes 1 and 2                   ``d_first()``
``softmaxgan_graph_fix3``        fix 3 (D:G = 1:2)               ``simultaneous(d_every=2)``
``detach_or_retain_strategy1``   strategy 1 (``retain_graph``)   raises (in-place)
``detach_or_retain_strategy2/3`` strategies 2 and 3              ``d_first()``,
                                                                 ``simultaneous()``
``which_first_post_d_first``     the "slow" BEGAN loop           ``d_first()``
``which_first_post_g_first``     the "fast" BEGAN loop           ``simultaneous()``
``textbook_loop``                any D or G step counts, naive   ``d_first``, ``g_first``
                                 passes                          with options
================================ =============================== =============================

The loops of public codebases below are written as their source files are, the file
and commit named in each docstring: the source's random draws (PyTorch-GAN's
``np.random``, passed in as ``rng``), its order of forwards, its loss reductions and
its modules' outputs (a D ending in a sigmoid stays so). Their tests compare ganstep
with these, never with a re-writing of them: ``pytorch_examples_dcgan``,
``pytorch_gan_wgan``, ``pytorch_gan_acgan``, ``pytorch_gan_sgan``,
``pytorch_gan_infogan``, ``pytorch_gan_context_encoder``, ``pytorch_gan_ccgan``,
``pytorch_gan_esrgan`` (and BasicSR's ``basicsr_esrgan``), ``pytorch_gan_srgan``,
``pytorch_gan_dragan``, ``pytorch_gan_wgan_div``, ``pytorch_gan_relativistic``,
``pytorch_gan_stargan``, ``pytorch_gan_cyclegan``, ``pytorch_gan_discogan``,
``pytorch_gan_dualgan``, ``pytorch_gan_bicyclegan``, ``diffaugment`` with ``diff_augment``,
``taming_vqgan``, ``hifigan``, ``descript_melgan`` (its feature matching against D's
real features from D's step, before D's update), ``pytorch_gan_bgan``, ``pytorch_gan_ebgan``,
``pytorch_gan_aae``, ``pytorch_gan_cogan``, ``pytorch_gan_pixelda``
(tests/test_pytorch_gan_loops.py), and the conditional, image-to-image and StyleGAN2-ADA
loops, which docs/loops.md shows each beside its Step;
``udacity_gan_mnist`` (one-sided label smoothing, tests/test_label_smoothing.py);
``rasbt_gan_conv_smoothing`` (G trained against the smoothed label too, the same file);
``xchhuang_3dgan`` (a 3D-GAN stepping D only while its accuracy is below 0.8,
tests/test_d_step_if.py);
``lightning_bolts_dcgan`` (Lightning Bolts' DCGAN under Lightning 1.x's automatic
optimization, tests/test_real_g_fake.py);
``labml_gan`` (labml.ai's annotated GAN: smoothed labels drawn once, one per row, read by
an objective of the user's, tests/test_label_smoothing.py);
``natsu6767_infogan`` (Natsu6767/InfoGAN-PyTorch: the info loss in G's step, its Q head
in G's optimizer, tests/test_infogan.py);
``dcgan_tensorflow`` (G's optimizer run twice on one z, tests/test_g_steps_share_z.py);
``lynnho_gan`` (LynnHo's five adversarial losses, tests/test_lynnho_losses.py);
``persson_progan`` (aladdinpersson's ProGAN: G and the critic called with a growing fade-in
``alpha``, ProGAN's drift term, a minibatch-std critic, tests/test_progan.py);
``emilien_dupont_wgan_gp`` (the penalty's norm as ``sqrt(sum + 1e-12)``),
``lynnho_wgan_gp`` (its interpolates as
``real + alpha * (fake - real)``), ``zeleni9_wgan_gp`` (the norm over channels of an
unflattened image gradient) and ``martinarjovsky_wgan`` (the WGAN authors' ``main.py``: a
D returning its batch mean, scoring real samples low, clamped before each D step, its
number of D steps varying), tests/test_wgan.py; ``caogang_wgan_gp`` (caogang/wgan-gp's
``gan_mnist.py``: three backward calls a D step, flat images), tests/test_caogang_wgan_gp.py;
``sagan`` (Self-Attention-GAN's WGAN-GP in a
D step of its own, and its hinge loop), tests/test_sagan.py; ``rosinality_stylegan2``
(rosinality/stylegan2-pytorch's ``train.py``: style mixing drawn by Python's ``random``,
lazy R1 and path length on z of their own), tests/test_rosinality_stylegan2.py;
``nvidia_pix2pixhd`` (NVIDIA/pix2pixHD: both losses from one forward of G and three
of its multi-scale D, G stepped first), tests/test_pix2pixhd.py.

Why the retain_graph loops raise: ``backward(retain_graph=True)`` keeps D's graph,
which saved D's weights for the input gradient; ``optimizer_D.step()`` then changes
those weights in place, bumping their version counter, and the second ``backward``
through the kept graph finds them changed: "one of the variables needed for gradient
computation has been modified by an inplace operation" (an error since PyTorch 1.5,
silently wrong gradients before). What those loops meant is ``simultaneous``: both
gradients at the old parameters, from one D forward.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .common import (  # noqa: F401
    RELATIVISTIC,
    Batches,
    Latent,
    Pairs,
    _as_floats,
    _bce,
    _Losses,
    _one_hot,
    _set_requires_grad,
    gradient_penalty,
    relativistic_loss,
)
from .other_codebases import (  # noqa: F401
    _DIFF_AUGMENT,
    GANLoss,
    ImagePool,
    LabmlDiscriminatorLogitsLoss,
    LabmlGeneratorLogitsLoss,
    _brightness,
    _contrast,
    _cutout,
    _grid,
    _hifigan_discriminator_loss,
    _hifigan_feature_loss,
    _hifigan_generator_loss,
    _per_sample,
    _saturation,
    _translation,
    alexiajm_relativistic,
    basicsr_esrgan,
    biggan_hinge,
    caogang_wgan_gp,
    cyclegan,
    dcgan_tensorflow,
    descript_melgan,
    diff_augment,
    diffaugment,
    emilien_dupont_wgan_gp,
    esrgan,
    feature_matching,
    hifigan,
    labml_gan,
    lightning_bolts_dcgan,
    lightning_conditional_g_first,
    lightning_g_first,
    lightning_gan_example,
    lynnho_gan,
    lynnho_wgan_gp,
    martinarjovsky_wgan,
    natsu6767_infogan,
    persson_progan,
    pix2pix,
    rasbt_gan_conv_smoothing,
    sagan,
    sngan_collections,
    stylegan2_r1,
    taming_vqgan,
    udacity_gan_mnist,
    xchhuang_3dgan,
    zeleni9_wgan_gp,
)
from .pix2pixhd import nvidia_pix2pixhd  # noqa: F401
from .pytorch_examples import (  # noqa: F401
    dcgan_example,
    dcgan_r1,
    pytorch_examples_dcgan,
)
from .pytorch_gan import (  # noqa: F401
    pytorch_gan_aae,
    pytorch_gan_acgan,
    pytorch_gan_bgan,
    pytorch_gan_bicyclegan,
    pytorch_gan_ccgan,
    pytorch_gan_cgan,
    pytorch_gan_cogan,
    pytorch_gan_context_encoder,
    pytorch_gan_cyclegan,
    pytorch_gan_discogan,
    pytorch_gan_dragan,
    pytorch_gan_dualgan,
    pytorch_gan_ebgan,
    pytorch_gan_esrgan,
    pytorch_gan_g_first,
    pytorch_gan_infogan,
    pytorch_gan_pixelda,
    pytorch_gan_relativistic,
    pytorch_gan_sgan,
    pytorch_gan_srgan,
    pytorch_gan_stargan,
    pytorch_gan_wgan,
    pytorch_gan_wgan_div,
)
from .seed_posts import (  # noqa: F401
    _backward_memo_d_step,
    _g_step,
    _retain_graph_then_step,
    backward_memo_way1,
    backward_memo_way2,
    backward_memo_way3,
    backward_memo_way4,
    detach_or_retain_strategy1,
    detach_or_retain_strategy2,
    detach_or_retain_strategy3,
    softmaxgan_graph_fix1,
    softmaxgan_graph_fix2,
    softmaxgan_graph_fix3,
    softmaxgan_graph_original,
    textbook_loop,
    which_first_post_d_first,
    which_first_post_g_first,
)
from .stylegan2_pytorch import mixing_noise, rosinality_stylegan2  # noqa: F401

# The seed posts' loops were named by the posts' numbers before; those names still work.
_FORMER_NAMES = {
    "seed000_d_first": "which_first_post_d_first",
    "seed000_g_first": "which_first_post_g_first",
    **{f"seed001_way{k}": f"backward_memo_way{k}" for k in range(1, 5)},
    "seed002_original": "softmaxgan_graph_original",
    **{f"seed002_fix{k}": f"softmaxgan_graph_fix{k}" for k in range(1, 4)},
    **{f"seed003_strategy{k}": f"detach_or_retain_strategy{k}" for k in range(1, 4)},
}


def __getattr__(name: str) -> Callable:
    if name in _FORMER_NAMES:
        new = _FORMER_NAMES[name]
        warnings.warn(f"reference.{name} is now reference.{new}", DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
