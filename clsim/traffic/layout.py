"""Layout of the traffic instrument's state arrays, shared by the code that fills and reads them.

``T`` (int64, one row per Numba thread, so groups may run in parallel) is an arena: config and
counters at the fixed ``C_*`` indices, then sections whose start the config holds:

* ``S0``: one row of ``S_COLS`` counters per counted access site (slot);
* ``C_B0``: per kernel argument ``(first flag in M, data pointer, elements)``, then a dummy
  row (one flag) for buffers no argument matches;
* ``C_X0``: scratch for one step's words;
* ``C_N0``: ``N[k, slot, sg]``, how many lanes of sub-group ``sg`` ran their k-th access of
  the slot in the current pass of the work-item loop (row ``k = cap`` collects the accesses
  past the capacity);
* ``C_A0``: ``A[k, slot, sg, n]``, the byte address of the n-th of them (lanes arrive in lane
  order, so these are the step's lanes in order; column ``simd`` is a dump for lanes past the
  SIMD width).

A lane's k for a slot: ``S_RUNS`` holds ``stamp << RUN_BITS | runs`` of the last lane that ran
the slot, the stamp being ``C_STAMP0 + lid`` (``C_STAMP0`` moves on by the group size after
each work-item loop), so another lane or another pass starts again at 0.

``M`` (uint8, shared by all threads: it is only ever set to 1) holds one read flag per element
of every global buffer, then (from ``C_M_WRITE``) one write flag per element.
"""

# Config and counters.
(C_SIMD, C_SECTOR, C_LINE, C_BANKS, C_BANK_WIDTH, C_CAP, C_NSLOTS, C_SP, C_NL, C_NSG,
 C_KSTRIDE, C_STAMP0, C_M_WRITE, C_B0, C_X0, C_N0) = range(16)
C_A0 = 30
C_FLOPS = 16  # one counter per model.FLOP_KINDS entry
C_SHIFTS = 24  # log2 of sector, line and bank width (-1: not a power of two), 24..26
C_STACK = 32  # partial linear indices of multi-dimensional local accesses
C_STACK_DEPTH = 32
S0 = C_STACK + C_STACK_DEPTH  # first site row

# Site columns: bytes per access, space, the last lane's stamp and runs, whether steps are
# pending (the slot ran in the current loop pass), then the launch totals.
(S_NBYTES, S_SPACE, S_RUNS, S_PENDING, S_EXECS, S_STEPS, S_SECTORS, S_LINES, S_REPLAYS,
 S_OVERFLOW) = range(10)
S_COLS = 10
RUN_BITS = 20  # runs of one slot by one lane in one pass stay below 2**RUN_BITS - 1
SPACE_GLOBAL, SPACE_LOCAL = 1, 2
B_COLS = 3
