"""Sample-quality metrics: mode coverage on toy data, FID and KID on images."""

from .fid import FeatureExtractor, fid, kid
from .toy import toy_metrics

__all__ = ["FeatureExtractor", "fid", "kid", "toy_metrics"]
