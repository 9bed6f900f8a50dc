"""The Jensen-Shannon engine (SPEC section 4): sampler, Count-Min rows, PQA, entropy, kernels."""
