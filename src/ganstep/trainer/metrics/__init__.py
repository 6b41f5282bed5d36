"""Sample-quality metrics: mode coverage on toy data, FID, KID and class accuracy on images."""

from .classes import class_accuracy, train_classifier
from .fid import FeatureExtractor, fid, kid
from .toy import toy_metrics

__all__ = ["FeatureExtractor", "class_accuracy", "fid", "kid", "toy_metrics", "train_classifier"]
