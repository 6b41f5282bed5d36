"""Plain ``nn.Module`` generators and discriminators that users can import."""

from .dcgan import DCGANDiscriminator, DCGANGenerator
from .mlp import MLP

__all__ = ["DCGANDiscriminator", "DCGANGenerator", "MLP"]
