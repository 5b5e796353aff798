"""``clsim report path/file.py::SPEC``: a KernelSpec from a user file, found as ``clsim verify``
finds it (clsim/traffic/cli.py)."""

from __future__ import annotations

import pytest

from clsim.errors import SimulationError
from clsim.traffic.cli import variants


def test_report_takes_a_spec_from_a_user_file(tmp_path):
    """The named KernelSpec variable of the file is the one variant run."""
    path = tmp_path / "mine.py"
    path.write_text("from kernels_py.vector_add import SPEC as MY_ADD\n")
    chosen = variants([f"{path}::MY_ADD"])
    assert [spec.name for spec in chosen] == ["vector_add"]


def test_report_names_a_missing_spec_in_a_user_file(tmp_path):
    """A file without that spec: an error naming the file and the specs it has."""
    path = tmp_path / "empty.py"
    path.write_text("X = 1\n")
    with pytest.raises(SimulationError, match="defines no KernelSpec named 'NOPE'"):
        variants([f"{path}::NOPE"])


def test_report_on_a_device_shows_measured_time_next_to_the_floor(tmp_path, monkeypatch,
                                                                  capsys):
    """clsim report vector_add --device D: a second table against D's roofs (its peaks read
    from the cache here: no probe run) with the predicted floor, the measured time and the
    fraction of the bound; the JSON holds the device's rows, --plot draws its chart too."""
    import json

    from clsim.cli import main
    from tests.unit.test_roofline_devices import _first_usable
    from verify import timing

    info = _first_usable()
    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps({timing._identity(info): {"bandwidth_gbs": 10.0,
                                                          "fp32_gflops": 100.0}}))
    monkeypatch.setenv("CLSIM_PEAKS_CACHE", str(peaks))
    monkeypatch.setattr(timing, "measure_peaks", lambda info: pytest.fail("probe ran"))
    plot = tmp_path / "roof.png"
    assert main(["report", "vector_add", "--shape", "n=4096", "--device", info.short_name,
                 "--json", str(tmp_path / "r.json"), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    device_table = out.split(f"measured on {info.short_name}")[1]
    lines = {ln.split("  ")[0]: ln for ln in device_table.splitlines()}
    assert "predicted time" in lines and "roofline floor" in lines and "fraction of bound" in lines
    assert lines["measured time"].split()[-1] in ("s", "ms", "us", "ns")
    data = json.loads((tmp_path / "r.json").read_text())
    (device,) = data["devices"]
    assert device["device"] == info.short_name
    assert device["profile"]["dram_bandwidth_gbs"] == 10.0
    assert device["variants"][0]["measured_s"] > 0
    assert (tmp_path / f"roof-{info.short_name}.png").read_bytes()[:4] == b"\x89PNG"


def test_report_refuses_an_unknown_device_before_running_anything(capsys):
    """A bad --device name: one line naming it, exit 2, before any variant runs."""
    from clsim.cli import main

    assert main(["report", "vector_add", "--device", "no-such-device"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clsim: error: ") and "no-such-device" in err


def test_report_refuses_timing_on_an_interpreter(capsys):
    """--device oclgrind: refused with the reason (an interpreter's times are not hardware's),
    where the machine has oclgrind."""
    from clsim.cli import main
    from verify.devices import list_devices

    try:
        present = any(d.short_name == "oclgrind" for d in list_devices())
    except Exception as err:
        pytest.skip(f"no OpenCL devices: {err}")
    if not present:
        pytest.skip("this machine has no oclgrind device")
    assert main(["report", "vector_add", "--device", "oclgrind"]) == 2
    assert "an interpreter; its kernel times say nothing of hardware" in capsys.readouterr().err


def test_report_times_a_user_spec_with_its_own_cl_file(tmp_path, monkeypatch, capsys):
    """docs/kernelspec.md's SAXPY from the user's folder: its saxpy.cl beside it is the twin
    timed on the device (not a file under kernels_cl/)."""
    import json
    import re
    import shutil
    from pathlib import Path

    from clsim.cli import main
    from tests.unit.test_roofline_devices import _first_usable
    from verify import timing

    info = _first_usable()
    root = Path(__file__).resolve().parents[2]
    code = re.findall(r"```python\n(.*?)```", (root / "docs" / "kernelspec.md").read_text(),
                      re.S)[0]
    for support in (root / "tests" / "docs_support").iterdir():
        shutil.copy(support, tmp_path / support.name)
    (tmp_path / "my_specs.py").write_text(code)
    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps({timing._identity(info): {"bandwidth_gbs": 10.0,
                                                          "fp32_gflops": 100.0}}))
    monkeypatch.setenv("CLSIM_PEAKS_CACHE", str(peaks))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["report", f"{tmp_path / 'my_specs.py'}::SAXPY", "--shape", "n=1000",
                 "--device", info.short_name, "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "not timed" not in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["devices"][0]["variants"][0]["measured_s"] > 0


def test_report_refuses_a_dram_basis_on_a_profile_without_caches(tmp_path, capsys):
    """--basis dram with a profile that describes no caches: refused before anything runs."""
    from pathlib import Path

    from clsim.cli import main
    from clsim.profiles import load_profile

    text = Path(load_profile("h200").path).read_text()
    cache_keys = ("compute_units", "l1_bytes", "l1_ways", "l2_bytes", "l2_ways",
                  "local_mem_bytes")
    kept = [ln for ln in text.splitlines() if ln.split("=")[0].strip() not in cache_keys]
    kept = [ln.replace('name = "h200"', 'name = "nocache"') for ln in kept]
    custom = tmp_path / "nocache.toml"
    custom.write_text("\n".join(ln for ln in kept if not ln.startswith("aliases")) + "\n")
    assert not load_profile(str(custom)).has_caches
    assert main(["report", "vector_add", "--profile", str(custom), "--basis", "dram"]) == 2
    assert "describes no caches" in capsys.readouterr().err


def test_report_writes_json_only_when_asked(tmp_path, monkeypatch, capsys):
    """No report.json in the current folder unless --json names where."""
    from clsim.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["report", "vector_add", "--shape", "n=300", "--local-size", "64"]) == 0
    assert list(tmp_path.iterdir()) == [] and "wrote" not in capsys.readouterr().out
    assert main(["report", "vector_add", "--shape", "n=300", "--local-size", "64",
                 "--json", "r.json"]) == 0
    assert "wrote r.json" in capsys.readouterr().out
    assert (tmp_path / "r.json").is_file()


def _cache_files(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_report_reuses_the_traffic_variant_run_compiled(tmp_path):
    """`clsim run NAME --traffic` then `clsim report NAME` in fresh processes, one kernel
    cache: the report's launch finds the same generated module and Numba's compiled code
    for it (no new file in the cache), instead of compiling the variant again."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CLSIM_CACHE_DIR": str(tmp_path / "kernels")}
    common = ["--shape", "n=300", "--local-size", "64"]

    def cli(*argv):
        done = subprocess.run([sys.executable, "-m", "clsim.cli", *argv], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    cli("run", "vector_add", *common, "--traffic")
    before = _cache_files(tmp_path / "kernels")
    assert any(name.endswith(".nbi") for name in before)
    cli("report", "vector_add", *common)
    assert _cache_files(tmp_path / "kernels") == before
