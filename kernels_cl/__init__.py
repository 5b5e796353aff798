"""The OpenCL C twins of the library kernels (``kernels_py``), as ``.cl`` data files.

A package only so the files travel in the built wheel beside ``clsim``: ``KernelSpec.cl_path``
(``clsim/spec.py``) finds them in this folder whether clsim is installed or run from a checkout.
``planted/`` holds deliberately buggy twins for the verifier's tests and is not installed.
"""
