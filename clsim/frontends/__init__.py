"""Ways into clsim's one kernel IR (the Python kernel AST): ``opencl_c`` turns OpenCL C into
Python kernel source that the Python front end (``clsim.compiler.frontend``) compiles."""
