"""The launch configuration and the simulated device.

Contracts: ``run(..., device=NAME)`` simulates that profile's device: its sub-group size, its
maximum work-group size, its local memory size and its reduction order apply unless ``run()``
overrides them; the default device is the h200 profile's; ``result.config`` is the frozen
``LaunchConfig`` the launch ran with; ``checks="none"`` checks nothing, barrier divergence
included; unknown ``run()`` options are rejected by name; instrument results and error
decoders come from the registry.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_local_id,
    get_sub_group_size,
    kernel,
    local_array,
)
from clsim.instruments import registry
from clsim.profiles import load_profile
from clsim.runtime.config import SimDevice, resolve_device

F32 = np.float32


@kernel
def sg_size(out):
    out[get_global_id(0)] = get_sub_group_size()


@kernel
def divergent_barrier(out):
    i = get_local_id(0)
    if i < 3:
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = 1


@kernel
def big_local(out):
    s = local_array(16384, np.float32)  # 64 KiB
    s[get_local_id(0)] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[get_local_id(0)]


def test_device_profile_sets_subgroup_size_and_limits():
    """intel-xe simulates 16-wide sub-groups and rejects work-groups over 512; an explicit
    subgroup_size still wins."""
    out = np.zeros(64, np.int32)
    r = clsim.run(sg_size, (64,), (64,), (out,), device="intel-xe")
    assert (out == 16).all() and r.config.subgroup_size == 16
    assert r.config.device.max_work_group_size == 512
    clsim.run(sg_size, (64,), (64,), (out,), device="intel-xe", subgroup_size=8)
    assert (out == 8).all()
    with pytest.raises(clsim.InvalidNDRangeError, match="512"):
        clsim.run(sg_size, (1024,), (1024,), (np.zeros(1024, np.int32),), device="intel-xe")


def test_default_device_is_the_h200_profile():
    out = np.zeros(64, np.int32)
    r = clsim.run(sg_size, (64,), (64,), (out,))
    assert r.config.device.name == "h200" and (out == 32).all()
    assert isinstance(resolve_device(load_profile("cpu")), SimDevice)


def test_local_memory_over_the_device_limit_is_an_error():
    """64 KiB of local memory fits the default device (NVIDIA's OpenCL: 48 KiB) nowhere; the
    error names the kernel, the size and the device."""
    out = np.zeros(64, F32)
    with pytest.raises(clsim.InvalidArgumentError, match=r"big_local.*65,?536.*h200"):
        clsim.run(big_local, (64,), (64,), (out,))
    clsim.run(big_local, (64,), (64,), (out,), device="cpu")  # the CPU profile allows it
    assert (out == 1).all()


def test_result_config_is_frozen_and_complete():
    out = np.zeros(64, np.int32)
    r = clsim.run(sg_size, (64,), (32,), (out,), device="arc", checks="bounds",
                  reduction_order="shuffled", reduction_seed=3)
    cfg = r.config
    assert (cfg.kernel, cfg.checks, cfg.reduction_order, cfg.reduction_seed) == (
        "sg_size", "bounds", "shuffled", 3)
    assert cfg.local_size == (32,) and cfg.device.name == "arc"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.checks = "all"


def test_checks_none_means_no_divergence_check_either():
    """The same divergent barrier raises by default and runs with checks="none"."""
    out = np.zeros(8, np.int32)
    with pytest.raises(clsim.BarrierDivergenceError):
        clsim.run(divergent_barrier, (8,), (8,), (out,))
    clsim.run(divergent_barrier, (8,), (8,), (out,), checks="none")
    assert (out == 1).all()


def test_unknown_options_are_rejected_by_name():
    with pytest.raises(clsim.InvalidArgumentError, match="tarffic"):
        clsim.run(sg_size, (8,), (8,), (np.zeros(8, np.int32),), tarffic=True)


def test_instrument_results_default_from_the_registry():
    """Every registered instrument's result field exists on a plain run, with its default."""
    r = clsim.run(sg_size, (8,), (8,), (np.zeros(8, np.int32),))
    defaults = registry.result_defaults()
    assert set(defaults) >= {"traffic", "findings"}
    for name, value in defaults.items():
        assert getattr(r, name) == value
    with pytest.raises(AttributeError):
        r.no_such_result  # noqa: B018
