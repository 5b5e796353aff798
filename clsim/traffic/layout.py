"""Layout of the traffic instrument's state arrays, shared by the code that fills and reads them.

Four arrays, each with one row per Numba thread (so groups may run in parallel), plus ``M``:

``T`` (int64) is an arena: config and counters at the fixed ``C_*`` indices, then sections whose
start the config holds:

* ``S0``: one row of ``S_COLS`` counters per counted access site (slot);
* ``C_B0``: per kernel argument ``(first flag in M, data pointer, elements, flagged)``
  (flagged: ``B_READ``, ``B_WRITTEN`` and their ``_BLOCKS``, set as the step counter sets
  one of its element or block flags, ``M``), then a dummy row (one flag) for buffers no
  argument matches;
* ``C_X0``: scratch for one step (addresses, words, per-bank counts);
* ``C_CNT0``: ``CNT[slot, lane]``, how many times the lane ran the slot in the current pass of
  the work-item loop (cleared when the pass is counted);
* ``C_PEND0``: one flag per slot: it ran in the current pass (per-run records: the highest
  lane that ran it, plus 1, so the step counter skips the sub-groups above; descriptors: 1).
* ``C_STAGE0``: ``STAGE[slot, lane, 3]``, the lane's loop descriptor of the slot not yet in
  its log (first and last byte address, runs; runs 0: none), written by the generated code
  after each execution of a loop recorded once per loop; ``C_STAGED0``: one flag per slot:
  some lane staged one. ``steps.end`` moves them into the logs before counting, so the
  kernel stages with a few stores instead of a call per lane.
* ``C_LANES0``: ``LANES[slot, LANE_COLS]``, the slot's *lane run* of the current pass: lanes
  ``first..end - 1`` each ran it once, in lane order, at equally spaced elements along each
  row of ``row`` lanes (``get_local_id(0)``; a 1-D run has one row of all the lanes), the
  element of local id (lx, ly) at ``origin + stride * lx + row stride * ly`` of the buffer at
  byte ``base``. The generated code extends it per lane (``recorders.lane``); a lane that
  fits no run gives it up (``end`` -2, ``kept``: its old end), records itself and leaves the
  run's lanes for the step counter to move into the logs. After the pass the run is staged
  (``recorders.stage_lanes``), in bytes from its first lane, and the slot's ``C_STAGED0``
  flag set to ``STAGED_LANES`` (counted in closed form) or ``STAGED_GIVEN_UP``. A pass's
  ``scratch[lid] = ...`` is a few stores for the whole group, not one log entry per lane.
* ``C_STRIDED0``: ``STRIDED[slot, STRIDED_COLS]``, the slot's strided loop of the current
  pass, a loop ``for c in range(lid + U, stop, step)`` run lane-major: lane ``l`` of the
  group's ``lanes`` ran its access at ``P + c`` ``ceil((span - l) / stride)`` times
  (``span = stop - U``, ``stride = step``), from byte ``first + l * lane`` on, ``step``
  bytes apart (flag ``STAGED_STRIDED``). That is what every lane's ``STAGE`` would hold,
  written once by the group; the step counter counts it as it would count those.
  A loop every lane of a proven 2-D region runs alike, at indices affine in the lane ids
  and the loop's variable, is staged there for the group as well (``G_*``, flag
  ``STAGED_GRID``): lane (lx, ly) ran ``trips`` runs from byte ``origin + x * lx + y * ly``
  on, ``step`` bytes apart.

``L`` (int64) holds ``L[slot, k // 8, lane, k % 8]``: the byte address of the lane's k-th run
of the slot in the current pass (cap is a multiple of 8; ``k = cap`` is a dump for the runs
past the capacity, in a block of its own). A lane's runs fill one cache line at a time (a
lane-major layout
``[slot, k, lane]`` makes every store of a long loop miss the cache), and step k of a
sub-group reads one line per lane, the same lines for the next 7 steps. A slot whose
accesses a loop records once per loop (``S_AFFINE``) logs, instead of addresses, one
descriptor per execution of the loop: ``D_COLS`` entries (first byte address, step in bytes,
number of runs), the lane's counter counting entries.

``R`` (int64) is the thread's sector stream, what the cache model replays after the launch:
``-(group + 1)`` starts a group, then one entry per run of consecutive sectors of one step:
``sector << R_SHIFT | count << 2 | kind`` (kind: ``R_LOAD``, ``R_STORE``, ``R_ATOMIC``,
``R_ATOMIC_LOAD``). A sub-group's steps through a loop, each as many sectors a whole number
of lines after the last (``step_rules._line_strided_runs``), are one *repeated entry* of two
words: ``sector << R_SHIFT | kind`` (count 0, which no other entry has), then
``runs << R_RUNS_SHIFT | count << R_COUNT_SHIFT | step`` (step in sectors, from 0 to
``R_MAX_STEP``): run j covers ``count`` sectors from ``sector + step * j``, as ``runs``
entries would. A GEMV's matrix and vector are 64 runs a sub-group: one entry, not 64.
Global byte addresses carry the buffer's argument index above ``BUFFER_SHIFT``.

``M`` (uint8, shared by all threads: it is only ever set to 1) holds one read flag per element
of every global buffer, then (from ``C_M_WRITE``) one write flag per element, then (from
``2 * C_M_WRITE``) one *block flag* per ``FOOTPRINT_BLOCK`` flags of the two: a step covering
a whole block of elements sets its block flag, not the block's element flags (a GEMV's
matrix rows are 1 MB of block flags, not 16 MB of element flags to set, count and clear).
Each buffer's flags start at a multiple of ``FOOTPRINT_BLOCK``, so a block is one buffer's.
An element was read (written) if its flag or its block's is set. ``end`` sets them from
the steps' addresses (the buffer is in the address), not the recorders.
"""

# Config and counters.
(C_SIMD, C_SECTOR, C_LINE, C_BANKS, C_BANK_WIDTH, C_CAP, C_NSLOTS, C_SP, C_NL, C_NSG,
 C_CNT0, C_PEND0, C_M_WRITE, C_B0, C_X0, C_R_LEN) = range(16)
C_FLOPS = 16  # one counter per model.FLOP_KINDS entry (16..22)
C_R_LOST = 23  # sectors of steps that found the stream full (not simulated: uncached)
C_SHIFTS = 24  # log2 of sector, line and bank width (-1: not a power of two), 24..26
C_R_CAP = 27  # capacity of the stream R
C_STAGE0, C_STAGED0 = 28, 29  # bases of the loop descriptors' staging area and its flags
C_LANES0 = 30  # base of the lane runs' staging area (``LANES``)
C_STRIDED0 = 31  # base of the strided loops' staging area (``STRIDED``)
C_STACK = 32  # partial linear indices of multi-dimensional local accesses
C_STACK_DEPTH = 32
S0 = C_STACK + C_STACK_DEPTH  # first site row

# Site columns: bytes per access, element size, space, kind (R_*), then
# launch totals; S_AFFINE is set (by the loop recorder) when the slot logs descriptors,
# S_LOST holds runs of descriptors that found the lane's log full, until ``end`` counts them.
(S_NBYTES, S_ISZ, S_SPACE, S_KIND, S_EXECS, S_STEPS, S_SECTORS, S_LINES, S_REPLAYS,
 S_OVERFLOW, S_AFFINE, S_LOST, S_ISZ_SHIFT) = range(13)
S_COLS = 13
# A lane run's columns (elements while recorded, bytes once staged).
(L_FIRST, L_END, L_ORIGIN, L_STRIDE, L_ROW_STRIDE, L_ROW, L_KEPT, L_BASE, L_ISZ) = range(9)
LANE_COLS = 9
STAGED_LOOP, STAGED_LANES, STAGED_GIVEN_UP, STAGED_STRIDED, STAGED_GRID = 1, 2, 3, 4, 5
# (the C_STAGED0 flags)
# A lane's element in a group function's lane array of one access (``recorders.block``):
# the lane has not run it in this pass.
NOT_RUN = -(1 << 62)
D_COLS = 3  # a descriptor's entries in the lane log: first address, step, runs
# A strided loop's columns (``STRIDED``): lane 0's first byte address, bytes between
# lanes and between runs, elements from lane 0's first to the end, elements per run,
# lanes of the group.
(T_FIRST, T_LANE, T_STEP, T_SPAN, T_STRIDE, T_LANES) = range(6)
STRIDED_COLS = 15
# A proven 2-D region's loop, in the same place (flag ``STAGED_GRID``): lane (0, 0)'s first
# byte address, bytes between lanes along a row and between rows, bytes between runs, the
# runs, lanes per row.
(G_ORIGIN, G_X, G_Y, G_STEP, G_TRIPS, G_ROW) = range(6)
# A local grid loop's last counts (``steps._grid_slot``), from column G_MEMO on: its six
# columns above as counted (trips plus 1: a zero row matches nothing), then the executions,
# steps and bank replays they added.
G_MEMO = 6
G_EXECS, G_STEPS, G_REPLAYS = 6, 7, 8
SPACE_GLOBAL, SPACE_LOCAL = 1, 2
B_COLS = 4
B_FLAGGED = 3  # the column of a kernel argument's row: which of its flags may be set
# Its bits: element flags read and written, block flags read and written (a write's bit is
# the read's shifted by one).
B_READ, B_WRITTEN, B_READ_BLOCKS, B_WRITTEN_BLOCKS = 1, 2, 4, 8
FOOTPRINT_BLOCK_SHIFT = 4
FOOTPRINT_BLOCK = 1 << FOOTPRINT_BLOCK_SHIFT  # element flags per block flag (``M``)

# Read-modify-write atomics are R_ATOMIC; atomic_load (R_ATOMIC_LOAD) only reads, done in the
# L2 like the others; atomic_store counts as a store. Their sites start as R_ATOMIC and the
# recorder wrapper ``_tr_k`` sets the slot's kind (the site table says only "atomic").
R_LOAD, R_STORE, R_ATOMIC, R_ATOMIC_LOAD = 0, 1, 2, 3
R_SHIFT = 16  # a stream entry's count field holds up to 2**14 - 1 sectors
R_MAX_RUN = (1 << (R_SHIFT - 2)) - 1
# A repeated entry's second word: runs (up to R_MAX_RUNS), sectors of a run, sectors from one
# run to the next (up to R_MAX_STEP).
R_COUNT_SHIFT = 22
R_RUNS_SHIFT = R_COUNT_SHIFT + R_SHIFT - 2
R_MAX_STEP = (1 << R_COUNT_SHIFT) - 1
R_MAX_RUNS = (1 << (63 - R_RUNS_SHIFT)) - 1
BUFFER_SHIFT = 40  # byte address = argument index << BUFFER_SHIFT | offset in the buffer
