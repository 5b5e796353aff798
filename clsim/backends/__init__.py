"""Back ends: ways out of the typed Python kernel AST other than the simulator's own code
generator (``clsim.compiler``). ``opencl_c`` prints OpenCL C."""
