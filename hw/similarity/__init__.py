"""The JACC all-pairs similarity kernel: union + feature units and the kernel core
(docs/similarity_kernel.md)."""

from .feature_unit import FeatureUnit
from .kernel import SimilarityKernel

__all__ = ["FeatureUnit", "SimilarityKernel"]
