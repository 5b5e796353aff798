"""The verifier on real devices: it agrees where the pair agrees, and catches planted bugs.

The planted ``.cl`` variants in kernels_cl/planted/ each differ from their Python kernel in one
way the verifier must catch and locate: an off-by-one tail guard (vector_add), a different
reduction order (block_sum), and a contraction the simulator does not do (saxpy with
``FP_CONTRACT ON`` or an explicit ``fma``). The expected first differing index is computed
independently here (numpy), then compared with what the verifier reports. Also: failures are
saved before they are reported and replay, the CLI commands, and the pytest plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

import clsim
import verify
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    local_array,
)
from clsim.errors import DeviceError, InvalidArgumentError
from clsim.spec import EXACT, KernelSpec, Launch, get_spec, ulp
from kernels_py.common import tree_reduce_sum
from kernels_py.vector_add import vector_add
from verify import cli
from verify.devices import get_device
from verify.failures import load_failure
from verify.fuzz import fuzz_spec
from verify.pairs import CONTRACT_OFF, contract_off, spec_pair, uses_subgroups
from verify.replay import replay
from verify.strategies import float_arrays, problem_launches
from verify.testing import device_params

ROOT = Path(__file__).resolve().parents[2]
CL = ROOT / "kernels_cl"
PLANTED = CL / "planted"
WG = 256
# CLI runs need a device that builds: the first usable one (pocl where the wheel's PoCL works).
USABLE = get_device(None).short_name


@clsim.kernel
def saxpy(a, x, y, n):
    i = get_global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


@clsim.kernel
def block_sum(x, out, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    i = get_global_id(0)
    scratch = local_array(WG, np.float32)
    if i < n:
        scratch[lid] = x[i]
    else:
        scratch[lid] = 0.0
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        out[get_group_id(0)] = scratch[0]


# --- independent models of the planted bugs ----------------------------------------------------


def _grid_saxpy_inputs(n: int, seed: int = 0) -> tuple[np.float32, np.ndarray, np.ndarray]:
    """a, x, y on a 2**-24 grid where a*x+y is exact in float64, so float32(float64 result)
    is the correctly rounded fma and a*x alone often needs rounding in float32."""
    rng = np.random.default_rng(seed)
    a = np.float32(int(rng.integers(1 << 12, 1 << 13)) * 2.0**-12)
    x = (rng.integers(1 << 13, 1 << 14, n) * 2.0**-12).astype(np.float32)
    y = (rng.integers(-(1 << 26), 1 << 26, n) * 2.0**-24).astype(np.float32)
    return a, x, y


def _fused(a: np.float32, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


def _first_bit_difference(p: np.ndarray, q: np.ndarray) -> int:
    diff = np.flatnonzero(p.view(np.uint32) != q.view(np.uint32))
    assert diff.size, "the model says the planted bug does not show on these inputs"
    return int(diff[0])


def _interleaved_block_sums(x: np.ndarray, n: int, wg: int, groups: int) -> np.ndarray:
    """block_sum_interleaved.cl's order: per group, lid += lid + stride for stride 1, 2, 4..."""
    padded = np.zeros(groups * wg, np.float32)
    padded[:n] = x[:n]
    blocks = padded.reshape(groups, wg).copy()
    stride = 1
    while stride < wg:
        lids = np.arange(0, wg - stride, 2 * stride)
        blocks[:, lids] = blocks[:, lids] + blocks[:, lids + stride]
        stride *= 2
    return blocks[:, 0].copy()


# --- compare: agreement ------------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_compare_agrees_bitwise_with_time(device):
    """verify.compare on a correct pair (vector_add) agrees bit for bit, compares every array
    argument by default (inputs untouched on both sides) and reports a profiling time."""
    n = 1000
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    c = np.zeros(n, np.float32)
    result = verify.compare(vector_add, CL / "vector_add.cl", global_size=1024, local_size=64,
                            args=[a, b, c, np.int32(n)], device=device)
    assert result.equal and result.first_difference is None
    assert set(result.outputs.comparisons) == {"a", "b", "c"}
    assert result.max_ulp == {"a": 0, "b": 0, "c": 0}
    assert not c.any()  # the caller's arrays are not written
    assert result.time_ns is None or result.time_ns >= 0


def test_compare_outputs_and_policy_arguments():
    """outputs= limits the comparison to the named buffers, a mapping sets per-buffer policies,
    args may be given by name, and naming a buffer the kernel lacks is an InvalidArgumentError."""
    n = 100
    args = {"a": np.ones(n, np.float32), "b": np.ones(n, np.float32),
            "c": np.zeros(n, np.float32), "n": np.int32(n)}
    result = verify.compare(vector_add, CL / "vector_add.cl", global_size=128, local_size=64,
                            args=args, outputs={"c": "ulp(1)"})
    assert list(result.outputs.comparisons) == ["c"] and result.equal
    assert str(result.outputs.comparisons["c"].policy) == "ulp(1)"
    with pytest.raises(InvalidArgumentError, match="not parameters"):
        verify.compare(vector_add, CL / "vector_add.cl", global_size=128, local_size=64,
                       args=args, outputs=["d"])


def test_compare_without_local_size_uses_the_simulators_choice():
    """With local_size=None both sides get the local size the simulator picks, so kernels whose
    result depends on the work-group size are compared on the same split (here 144: the
    largest divisor of 288 up to 256)."""
    n = 3 * 96
    x = np.random.default_rng(2).standard_normal(n, np.float32)
    result = verify.compare(block_sum, CL / "planted" / "block_sum.cl", global_size=n,
                            args=[x, np.zeros(n, np.float32), np.int32(n)], outputs=["out"])
    assert result.equal and result.local_size == (144,)


# --- compare: planted bugs ---------------------------------------------------------------------


@pytest.mark.parametrize("device", device_params())
def test_off_by_one_reported_at_last_index(device):
    """The off-by-one guard (i < n - 1) leaves c[n-1] unwritten: the first difference is at
    index n-1, with the simulator's a+b and the device's 0.0, both as float and hex."""
    n = 1000
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    result = verify.compare(vector_add, PLANTED / "vector_add_off_by_one.cl", global_size=1024,
                            local_size=64, args=[a, b, np.zeros(n, np.float32), np.int32(n)],
                            device=device, outputs=["c"])
    diff = result.first_difference
    assert not result.equal and result.n_different == 1
    assert diff.buffer == "c" and diff.index == (n - 1,) and diff.flat_index == n - 1
    assert diff.expected == a[n - 1] + b[n - 1] and diff.actual == 0.0
    assert diff.expected_hex == f"0x{int((a[n - 1] + b[n - 1]).view(np.uint32)):08x}"
    assert diff.actual_hex == "0x00000000" and diff.ulp > 0


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("variant", ["saxpy_fma.cl", "saxpy_contract_on.cl"])
def test_contraction_reported_at_first_fused_index(device, variant):
    """An explicit fma, or FP_CONTRACT ON with a*x+y (every device here fuses it), rounds once
    where the simulator rounds twice: the first difference is the first index where the
    correctly rounded fma differs from the separately rounded result (computed exactly here).
    The baseline saxpy.cl agrees bit for bit on the same inputs."""
    n = 4096
    a, x, y = _grid_saxpy_inputs(n)
    separate = (a * x + y).astype(np.float32)
    fused = _fused(a, x, y)
    first = _first_bit_difference(separate, fused)
    args = [a, x, y, np.int32(n)]
    result = verify.compare(saxpy, PLANTED / variant, global_size=n, local_size=64, args=args,
                            device=device, outputs=["y"])
    diff = result.first_difference
    assert diff is not None and diff.index == (first,)
    assert diff.expected == separate[first] and diff.actual == fused[first]
    assert diff.ulp == 1
    baseline = verify.compare(saxpy, PLANTED / "saxpy.cl", global_size=n, local_size=64,
                              args=args, device=device, outputs=["y"])
    assert baseline.equal


@pytest.mark.parametrize("device", device_params())
def test_reduction_order_reported_at_first_differing_group(device):
    """A neighbour-pairing (interleaved) tree instead of the kernel's halving tree rounds
    differently: the first difference is out[g] for the first group g where the two orders
    differ (modelled here), with the simulator's sum as expected and the interleaved sum as
    actual. The correct twin agrees bit for bit, tail included."""
    wg, groups = 100, 40
    n = wg * groups - 7  # a tail: the last group is partly padding
    x = np.random.default_rng(4).standard_normal(n, np.float32)
    args = [x, np.zeros(groups, np.float32), np.int32(n)]
    tree = verify.compare(block_sum, PLANTED / "block_sum.cl", global_size=wg * groups,
                          local_size=wg, args=args, device=device, outputs=["out"])
    assert tree.equal
    interleaved = _interleaved_block_sums(x, n, wg, groups)
    first = _first_bit_difference(tree.simulator["out"], interleaved)
    result = verify.compare(block_sum, PLANTED / "block_sum_interleaved.cl",
                            global_size=wg * groups, local_size=wg, args=args, device=device,
                            outputs=["out"])
    diff = result.first_difference
    assert diff is not None and diff.index == (first,)
    assert diff.expected == tree.simulator["out"][first] and diff.actual == interleaved[first]


# --- fuzz: shrinking, saving, replay -----------------------------------------------------------


@pytest.mark.parametrize("device", device_params(only=("pocl", "intel-cpu")))
def test_fuzz_spec_shrinks_saves_and_replays_off_by_one(device, tmp_path):
    """fuzz_spec with the off-by-one twin finds a disagreement, shrinks it to a small case whose
    first difference is at index n-1, saves the first and the minimal example (inputs, launch,
    seed, device, .cl source) before returning, and replay reproduces it; replaying with the
    correct twin agrees."""
    spec = get_spec("vector_add")
    report = fuzz_spec(spec, device, examples=50, seed=7, failures_dir=tmp_path,
                       cl_source=PLANTED / "vector_add_off_by_one.cl")
    found = report.found
    assert found is not None and found.comparison is not None and report.seed == 7
    n = found.case.shape["n"]
    assert n <= 4 and found.comparison.first_difference.index == (n - 1,)
    assert found.first_path.is_dir() and (found.path / "kernel.cl").is_file()
    saved = load_failure(found.path)
    assert saved.device == device and saved.seed == 7 and saved.spec_name == "vector_add"
    assert saved.launch["global_size"] == found.case.global_size
    for name, value in found.case.args.items():
        assert np.array_equal(np.asarray(saved.inputs[name]), np.asarray(value))
    _, _, outcomes = replay(found.path)
    assert [o.device for o in outcomes] == [device]
    assert outcomes[0].comparison.first_difference.index == (n - 1,)
    _, _, fixed = replay(found.path, cl_source=CL / "vector_add.cl")
    assert fixed[0].equal


@pytest.mark.parametrize("device", device_params(only=("intel-cpu", "pocl")))
def test_fuzz_spec_one_seed_draws_the_same_cases_with_and_without_checks(
        device, tmp_path, monkeypatch):
    """A seed replays: a verify without the simulator's checks and one with them (other modules
    loaded, other simulation paths) draw the same cases (verify.seeding)."""
    fuzz_module = sys.modules["verify.fuzz"]  # the module; verify.fuzz is the function
    run_pair, drawn = fuzz_module.run_pair, []

    def recording(pair, case, info, **options):
        drawn.append((case.global_size, case.local_size,
                      [np.asarray(case.args[p]).tobytes() for p in pair.params]))
        return run_pair(pair, case, info, **options)

    monkeypatch.setattr(fuzz_module, "run_pair", recording)
    for checks in ("default", "all"):
        report = fuzz_spec(get_spec("vector_add"), device, examples=12, seed=23,
                           failures_dir=tmp_path, checks=checks)
        assert report.equal, report.found
    assert len(drawn) == 24 and drawn[:12] == drawn[12:]


def _saxpy_launches(max_size: int = 300) -> st.SearchStrategy[Launch]:
    @st.composite
    def draw(draw_fn: st.DrawFn) -> Launch:
        n, glob, local = draw_fn(problem_launches(max_size=max_size, max_local=64))
        a = np.float32(draw_fn(st.floats(-4, 4, width=32)))
        x = draw_fn(float_arrays(n, allow_nan=False, allow_inf=False))
        y = draw_fn(float_arrays(n, allow_nan=False, allow_inf=False))
        return Launch(glob, local, (a, x, y, np.int32(n)))
    return draw()


@pytest.mark.parametrize("device", device_params())
def test_fuzz_user_pair_agrees(device, tmp_path):
    """verify.fuzz over drawn saxpy launches (tails, edge values) agrees with the correct
    twin on every device, and saves nothing."""
    report = verify.fuzz(saxpy, PLANTED / "saxpy.cl", launches=_saxpy_launches(),
                         device=device, outputs=["y"], examples=25, seed=1,
                         failures_dir=tmp_path)
    assert report.equal and report.examples == 25 and report.max_ulp == {"y": 0}
    assert not list(tmp_path.iterdir())


def test_fuzz_user_pair_finds_fma_with_a_minimal_example(tmp_path):
    """verify.fuzz finds the explicit fma and shrinks it: the reported element is one where the
    fused and separately rounded results really differ (checked exactly on the minimal case),
    and it is the first such element."""
    report = verify.fuzz(saxpy, PLANTED / "saxpy_fma.cl", launches=_saxpy_launches(),
                         outputs=["y"], examples=100, seed=2, failures_dir=tmp_path)
    found = report.found
    assert found is not None
    args = found.case.args
    diff = found.comparison.first_difference
    separate = (args["a"] * args["x"] + args["y"]).astype(np.float32)
    fused = found.comparison.device_outputs["y"]
    assert diff.index == (_first_bit_difference(separate, fused),)
    assert diff.expected == separate[diff.index] and int(args["n"]) <= 8
    origin = json.loads((found.path / "meta.json").read_text())["launch"]["origin"]
    assert origin["attr"] == "saxpy"
    # A fresh process imports this file only because the command line names it (--kernel).
    proc = subprocess.run([sys.executable, "-m", "verify.cli", "replay", str(found.path),
                           "--kernel", f"{origin['path']}::saxpy"],
                          capture_output=True, text=True, cwd=ROOT, env=_env())
    assert proc.returncode == 1 and "DIFFER" in proc.stdout, proc.stdout + proc.stderr
    assert f"differs at index {diff.index}" in proc.stdout


def test_fuzz_finds_reduction_order_at_the_right_group(tmp_path):
    """verify.fuzz over drawn block sums (tails, odd work-group sizes, edge values) finds the
    interleaved tree and reports the first group whose sum the two orders round differently
    (NaN equal to NaN, as the exact policy says), checked on the minimal example."""
    @st.composite
    def launches(draw: st.DrawFn) -> Launch:
        n, glob, local = draw(problem_launches(max_size=500, max_local=64))
        x = draw(float_arrays(n, allow_nan=False))
        return Launch(glob, local, (x, np.zeros(glob[0] // local[0], np.float32),
                                    np.int32(n)))

    report = verify.fuzz(block_sum, PLANTED / "block_sum_interleaved.cl", launches=launches(),
                         outputs=["out"], examples=100, seed=5, failures_dir=tmp_path)
    found = report.found
    assert found is not None and found.comparison is not None
    args, local = found.case.args, found.case.local_size[0]
    groups = found.case.global_size[0] // local
    model = _interleaved_block_sums(args["x"], int(args["n"]), local, groups)
    simulated = found.comparison.simulator["out"]
    differs = (model.view(np.uint32) != simulated.view(np.uint32)) & ~(
        np.isnan(model) & np.isnan(simulated))
    assert found.comparison.first_difference.index == (int(np.flatnonzero(differs)[0]),)


@clsim.kernel
def vector_add_past_end(a, b, c, n):
    i = get_global_id(0)
    if i <= n:
        c[i] = a[i] + b[i]


def test_simulator_error_is_a_saved_failure(tmp_path):
    """When the simulator raises (here OutOfBoundsError: the Python kernel's guard is i <= n)
    the case is a failure too: shrunk to a launch with a tail, saved, and reported with the
    error text instead of a difference."""
    @st.composite
    def launches(draw: st.DrawFn) -> Launch:
        n, glob, local = draw(problem_launches(max_size=300, max_local=64))
        x = draw(float_arrays(n))
        return Launch(glob, local, (x, x.copy(), np.zeros(n, np.float32), np.int32(n)))

    report = verify.fuzz(vector_add_past_end, CL / "vector_add.cl", kernel_name="vector_add",
                         launches=launches(), examples=50, seed=3, failures_dir=tmp_path)
    found = report.found
    assert found is not None and found.comparison is None
    assert found.error.startswith("OutOfBoundsError")
    assert found.case.global_size[0] > int(found.case.args["n"])
    assert load_failure(found.path).meta["extra"]["error"] == found.error


def test_build_failure_raised_before_drawing(tmp_path):
    """A .cl source that does not build raises DeviceError with the build log before any
    example is drawn, so nothing is shrunk or saved."""
    broken = "__kernel void saxpy(float a, __global float* x, __global float* y, int n)" \
             " { y[0] = undeclared_thing; }"
    with pytest.raises(DeviceError, match="CL_BUILD_PROGRAM_FAILURE") as info:
        verify.fuzz(saxpy, broken, launches=_saxpy_launches(), examples=5,
                    failures_dir=tmp_path)
    assert "undeclared_thing" in info.value.build_log
    assert not list(tmp_path.iterdir())


def test_parse_policy_spellings():
    """Policies are given as 'exact', 'ulp(N)', 'ulp:N' or Policy objects; anything else is a
    ValueError naming the accepted spellings."""
    assert verify.parse_policy("exact") == EXACT
    assert verify.parse_policy("ulp(3)") == verify.parse_policy("ulp:3") == ulp(3)
    assert verify.parse_policy(ulp(2.5)) == ulp(2.5)
    with pytest.raises(ValueError, match="'exact', 'ulp"):
        verify.parse_policy("close enough")


@pytest.mark.parametrize("device", device_params(only=("pocl",)))
def test_spec_requiring_subgroups_is_skipped_with_reason(tmp_path, device):
    """A spec that requires sub-groups is skipped on a device without them (pocl), with the
    device's reason; the runner takes sub-group use from the .cl source."""
    base = get_spec("vector_add")
    spec = KernelSpec(name="vector_add_sg", description="test", kernel=base.kernel,
                      cl_file=base.cl_file, make_inputs=base.make_inputs, launch=base.launch,
                      reference=base.reference, outputs={"c": EXACT},
                      default_shape={"n": 64}, requires=frozenset({"subgroups"}))
    report = fuzz_spec(spec, device, examples=5, failures_dir=tmp_path)
    assert report.skipped.startswith("pocl lacks sub-groups") and report.equal
    assert uses_subgroups("x = sub_group_reduce_add(v);")
    assert uses_subgroups("__attribute__((intel_reqd_sub_group_size(16)))")
    assert not uses_subgroups("// sub_group_reduce_add in a comment\nx = y;")
    assert not spec_pair(base).uses_subgroups


def test_contract_off_added_unless_stated():
    """Every .cl source gets '#pragma OPENCL FP_CONTRACT OFF' (and '#line 1', so build-log
    line numbers stay right) unless the source states an FP_CONTRACT pragma itself."""
    assert contract_off("kernel void k() {}") == CONTRACT_OFF + "kernel void k() {}"
    on = (PLANTED / "saxpy_contract_on.cl").read_text()
    assert contract_off(on) == on


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_verify_reports_and_replays_planted_bug(tmp_path, capsys):
    """'clsim verify NAME --cl FILE' exits 1 on a disagreement and prints the minimal example:
    shape, input excerpt, first differing index, both values in hex, ULP distance, the saved
    folder; 'clsim replay FOLDER' reproduces it (exit 1) and agrees with the fix (exit 0)."""
    code = cli.main(["verify", "vector_add", "-d", USABLE, "-n", "30", "--seed", "3",
                     "--cl", str(PLANTED / "vector_add_off_by_one.cl"), "--no-progress",
                     "--failures-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "DIFFER" in out and "shape n=" in out
    assert "differs at index" in out and "0x" in out and "ULP distance" in out
    assert 'simulator with checks="all": no data race or uninitialised read' in out
    saved = [line.split("saved: ")[1] for line in out.splitlines() if "saved: " in line]
    assert len(saved) == 1 and Path(saved[0]).is_dir()
    assert cli.main(["replay", saved[0]]) == 1
    assert "DIFFER" in capsys.readouterr().out
    assert cli.main(["replay", saved[0], "--cl", str(CL / "vector_add.cl")]) == 0


def test_cli_verify_agrees_with_time(tmp_path, capsys):
    """'clsim verify vector_add --time' exits 0 when every device agrees and prints each
    device's kernel time at the default shape."""
    code = cli.main(["verify", "vector_add", "-d", USABLE, "-n", "10", "--seed", "1", "--time",
                     "--repeats", "1", "--no-progress", "--failures-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "agree" in out and "time at the default shape" in out
    assert " ms" in out or " s" in out


def test_cli_verify_user_file_spec(tmp_path, capsys):
    """'clsim verify path/file.py::NAME' imports a user's file and verifies the KernelSpec it
    defines, with its .cl file resolved beside the .py file."""
    (tmp_path / "double.cl").write_text(textwrap.dedent("""
        __kernel void double_it(__global const float* x, __global float* y, int n) {
            long i = get_global_id(0);
            if (i < n) { y[i] = x[i] + x[i]; }
        }"""))
    (tmp_path / "my_kernels.py").write_text(textwrap.dedent("""
        import numpy as np
        from clsim import get_global_id, kernel
        from clsim.spec import EXACT, KernelSpec, Launch

        @kernel
        def double_it(x, y, n):
            i = get_global_id(0)
            if i < n:
                y[i] = x[i] + x[i]

        def make_inputs(rng, shape):
            n = shape["n"]
            return {"x": rng.standard_normal(n, dtype=np.float32),
                    "y": np.zeros(n, np.float32), "n": np.int32(n)}

        def launch(inputs, shape, local_size=None):
            local = local_size or (32,)
            n = int(inputs["n"])
            return Launch((-(-n // local[0]) * local[0],), local,
                          (inputs["x"], inputs["y"], inputs["n"]))

        DOUBLE = KernelSpec(name="double_it", description="y = 2x", kernel=double_it,
                            cl_file="double.cl", make_inputs=make_inputs, launch=launch,
                            reference=lambda inputs: {"y": inputs["x"] * 2},
                            outputs={"y": EXACT}, default_shape={"n": 1000})
        """))
    ref = f"{tmp_path / 'my_kernels.py'}::DOUBLE"
    code = cli.main(["verify", ref, "-d", USABLE, "-n", "15", "--no-progress",
                     "--failures-dir", str(tmp_path / "failures")])
    assert code == 0 and "agree" in capsys.readouterr().out


def test_cli_devices_and_errors(capsys):
    """'clsim devices' prints the table (or JSON with --json); an unknown kernel or device is
    a one-line error with exit status 2 from the standalone entry point."""
    assert cli.main(["devices"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:3] == ["name", "usable", "platform"]
    assert cli.main(["devices", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert any(r["name"] == "pocl" for r in rows) and "local_mem_size" in rows[0]
    assert all(isinstance(r["usable"], bool) and "reason" in r for r in rows)
    assert cli.main(["verify", "no_such_kernel", "--no-progress"]) == 2
    assert "no kernel named 'no_such_kernel'" in capsys.readouterr().err
    assert cli.main(["verify", "vector_add", "-d", "no-such-gpu", "--no-progress"]) == 2


# --- pytest plugin -----------------------------------------------------------------------------


def test_pytest_plugin_parametrizes_device(tmp_path):
    """With verify.pytest_plugin, a test taking 'device' runs once per device kind with the
    short name as id; device_requires(...) skips devices lacking a feature, with the reason;
    an explicit parametrize of 'device' is left alone."""
    (tmp_path / "test_plugin_use.py").write_text(textwrap.dedent("""
        import pytest

        def test_any(device):
            assert isinstance(device, str)

        @pytest.mark.device_requires("work_group_size:100000000")
        def test_huge(device):
            pass

        @pytest.mark.parametrize("device", ["mine"])
        def test_explicit(device):
            assert device == "mine"
        """))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "verify.pytest_plugin", "-p", "no:cacheprovider",
         "-rs", "-v", str(tmp_path / "test_plugin_use.py")],
        capture_output=True, text=True, cwd=ROOT, env={**_env(), "CLSIM_TEST_DEVICES": USABLE})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert f"test_any[{USABLE}] PASSED" in out and "test_explicit[mine] PASSED" in out
    assert f"test_huge[{USABLE}] SKIPPED" in out
    assert f"{USABLE} lacks work-group size 100000000" in out


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
