"""Numba kernels over struct-of-arrays views of the cluster: fair share and placement."""
