"""The JACC all-pairs similarity kernel: union + feature units and the kernel core
(docs/jacc_similarity_kernel.md)."""

from ..common.feature_unit import FeatureUnit
from .kernel import JaccSimilarityKernel

__all__ = ["FeatureUnit", "JaccSimilarityKernel"]
