"""Layout of the checks' run-time state: record packing, meta slots, table columns, codes.

Every tracked memory object (a global buffer, a local array, a private array) has up to seven
int64 *records* per element, each in its own slice of one flat shadow array ``_cs_s``:

- ``W``: the last plain write;
- ``R1``/``R2``: the last plain read, and the last read by another work-item than ``R1``'s;
- ``RX``: a read from another work-group than ``R1``'s (global memory only);
- ``A1``/``A2``/``AX``: the same three for atomic accesses.

A record packs ``stamp << 29 | site << 15 | lid`` (0 = none). A stamp is
``group << epoch_bits | epoch``: the group's linear id (groups run serially and in order; the
instrument is not parallel-safe) and a counter that starts at 1 and grows at every barrier. So
a stamp below the current group's start belongs to an earlier group, "a barrier fencing local
memory ran after the access" is ``stamp < last_local_barrier``, and the group of any record is
a shift. Only constants live here; the code that uses them is ``shadow`` (in-kernel) and
``instrument``/``findings`` (Python).
"""

STAMP_SHIFT = 29
SITE_SHIFT = 15
LID_BITS = 15
MAX_LID = (1 << LID_BITS) - 1  # the largest local linear id a record can name
MAX_SITE = (1 << (STAMP_SHIFT - SITE_SHIFT)) - 1
STAMP_BITS = 63 - STAMP_SHIFT
MIN_EPOCH_BITS = 8

# _cs_m (meta) slots
M_NOW, M_GSTART, M_LAST_LOCAL, M_LAST_GLOBAL, M_LAST_SUB, M_EPOCH_BITS, M_SG_SIZE = range(7)
M_RAISE_RACE, M_RAISE_UNINIT, M_NFIND, M_OVERFLOW, M_G0, M_G1 = 7, 8, 9, 10, 11, 12
M_GX, M_GY, M_GZ, M_L0, M_L1, M_L2 = 13, 14, 15, 16, 17, 18
M_NPEND, M_LAST_KEY = 19, 20
# lock tracking (kernels with acquiring atomics only, ``locks``): the meta index of lane 0's
# held lock (lane k's at M_LOCK_BASE + k; 0: no lock tracking in this launch)
M_LOCK_BASE = 21
M_DEFER, M_NLOG, M_LOST = 22, 23, 24  # the deferred-access log (see shadow)
M_HELD = 25  # an uninitialised read waits in HELD_ROW for the end of the work-item loop
# the size (L0 | L1 << 16 | L2 << 32, plus 1) of the last group that recorded the
# group-invariant local arrays (``invariance``); 0: none yet
M_INVARIANT = 26
M_DEFER_FN = 27  # the address of the C function that appends to the log (``native``)
# 1 + the site of the first lock atomic with memory_order_relaxed that took or released a
# lock (0: none), and whether a lock was ever released with memory_order_relaxed
M_RELAXED, M_WEAK_RELEASE = 28, 29
# then, per object k, the range of shadow indices (of its W records) its global accesses
# touched: M_RANGES + 2k holds RANGE_TOP - lowest, M_RANGES + 2k + 1 highest + 1 (0: none),
# both kept as maxima so a zeroed meta means "nothing yet". Threaded runs (``parallel``)
# compare these per thread, to scan only where two threads' ranges overlap.
M_RANGES = 32
RANGE_TOP = 1 << 62
META_SIZE = M_RANGES + 2 * (1 << 10)
# then SLOT_WIDTH slots per access site: the leading indices of a multi-dimensional access
# (0..2) and the index being recorded (3), parked while the access expression is evaluated
M_SLOTS, SLOT_WIDTH, SLOT_INDEX = META_SIZE, 4, 3

# _cs_o (object table) columns
O_MODE, O_W, O_R1, O_R2, O_RX, O_A1, O_A2, O_AX, O_ADDR, O_NBYTES, O_ITEM, O_LEN = range(12)
# (O_LEN: shadow elements per record of an object that owns its shadow; 0 for one sharing it)
# With lock tracking, the plain records W, R1, R2, RX each have a twin holding the lock the
# access held (``lock id``, 0: none): its base in these columns (0: not allocated).
O_LW, O_LR1, O_LR2, O_LRX = 12, 13, 14, 15
LOCK_COLS = {O_W: O_LW, O_R1: O_LR1, O_R2: O_LR2, O_RX: O_LRX}
SHADOW_COLS = (O_W, O_R1, O_R2, O_RX, O_A1, O_A2, O_AX, O_LW, O_LR1, O_LR2, O_LRX)
OBJ_COLS = 16
# A lock id: the lock element's byte address << 2 | 2 for a local lock (it orders the
# work-items of one work-group only) | 1 when taken with memory_order_relaxed (orders nothing).
LOCK_LOCAL, LOCK_WEAK = 2, 1
# lock actions (``_cs_lock``): a failed acquire, an acquire, a relaxed acquire, a release, a
# relaxed release
LK_NONE, LK_ACQUIRE, LK_ACQUIRE_RELAXED, LK_RELEASE, LK_RELEASE_RELAXED = range(5)

# mode bits of an object
MB_W, MB_R, MB_A, MB_CROSS, MB_RACE, MB_UNINIT = 1, 2, 4, 8, 16, 32

# access kinds and finding categories
K_LOAD, K_STORE, K_ATOMIC = 1, 2, 3
CAT_RACE, CAT_UNINIT = 1, 2
ERR_BASE = 20  # error codes ERR_BASE + category in the engine's error record
ERR_EPOCHS = 29  # a work-group ran more barriers than the stamps can count

# hint bits: why two accesses were not ordered
H_CROSS_GROUP, H_WRONG_FENCE, H_SUBGROUP, H_ATOMIC_MIX = 1, 2, 4, 8
# a lock would order them but was taken or released with memory_order_relaxed; a lock is held
# by only one of them, or each holds a different one
H_RELAXED_LOCK, H_LOCKSET = 16, 32
RELAXED_SHIFT = 40  # info bits 40..: 1 + the site of the relaxed lock atomic (M_RELAXED)

# Error record / findings row: 0 code, 1 site, 2 element, 3 object, 4 lid, 5 earlier record,
# 6 kind | earlier kind << 4 | hint << 8 | sub-group size << 16 | relaxed site << 40,
# 7-9 group, 10 earlier group (linear), 11-13 group size, 14-15 global size 0-1; findings rows
# add these columns:
F_COUNT, F_KEY = 16, 17
FIND_COLS = 18
MAX_FINDINGS = 512  # distinct findings kept (rows 0..MAX_FINDINGS-1 of _cs_f)
PENDING = 4096  # findings noted within one work-item loop before _cs_flush (the rows after)
HELD_ROW = MAX_FINDINGS + PENDING  # the last row of _cs_f

# The log of accesses deferred to the end of a work-item loop: (element, packed) pairs, packed
# = kind | object << 2 | site << 12 | lid << 26.
LOG_CAPACITY = 1 << 20
MAX_OBJECTS = 1 << 10

# the state arguments of generated functions: the arrays above and the C entry point of the
# shared helpers (``native``)
STATE_ARGS = ("_cs_m", "_cs_o", "_cs_s", "_cs_f", "_cs_l", "_cs_fn")
