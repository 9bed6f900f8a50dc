"""Components shared by several kernels: the Count-Min unit and the HLL feature unit."""
