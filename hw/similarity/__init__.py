"""The JACC all-pairs similarity kernel: union + feature units and the kernel core
(docs/similarity_kernel.md)."""

from ..common.feature_unit import FeatureUnit
from .kernel import SimilarityKernel, similarity_desc

__all__ = ["FeatureUnit", "SimilarityKernel", "similarity_desc"]
