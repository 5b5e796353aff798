"""The OpenCL C front end: ``.cl`` kernels to clsim Python kernels (docs/opencl-c.md).

``parse`` (libclang, options, includes) -> ``emit`` (``exprs``, ``stmts``: tables of cursor
kind -> emitter) -> Python source the Python front end compiles; ``load`` executes it.
"""

from clsim.frontends.opencl_c.load import ClKernel, load_cl, translate

__all__ = ["ClKernel", "load_cl", "translate"]
