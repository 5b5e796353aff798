"""Save and reload the inputs of a disagreement between the simulator and a device.

Nothing is lost: the verifier calls ``save_failure`` *before* it reports a disagreement, so a
crash, a Ctrl-C or a Hypothesis shrink that moves on still leaves the failing case on disk.
Each failure is a folder ``<dir>/<spec>-<device>-<timestamp>-<hash>/`` holding

- ``inputs.npz``: every input array and numpy/Python scalar, bit-exact with its dtype
  (written without pickle; values numpy cannot store that way are kept as ``repr`` text in
  ``meta.json`` and come back as that text);
- ``meta.json``: spec name, device, seed, launch sizes, policy, the difference text, versions,
  and how to restore each input (array, 0-d array, numpy scalar or Python scalar);
- any text files the caller adds (the verifier stores the ``.cl`` source as ``kernel.cl``).

The folder is written under a temporary name and renamed when complete, so a listed failure is
never half written. This module does not compare, rerun or report; ``clsim verify --replay``
(or any caller) loads a ``Failure`` and reruns it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1
DEFAULT_DIR = ".clsim/failures"
META = "meta.json"
INPUTS = "inputs.npz"


@dataclass(frozen=True)
class Failure:
    """One saved disagreement, as loaded back: ``inputs`` have their exact saved dtypes."""

    path: Path
    spec_name: str
    device: str
    seed: Any
    launch: dict[str, Any]
    inputs: dict[str, Any]
    policy: Any = None
    difference: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def _slug(text: str, limit: int = 40) -> str:
    # Device names hold spaces, parentheses and '@' ("Intel(R) Core(TM) i7 @ 2.6GHz").
    return re.sub(r"[^A-Za-z0-9_.]+", "_", str(text)).strip("_.")[:limit] or "unknown"


def _jsonable(value: Any) -> Any:
    """Launch sizes, seeds and extras as JSON: numpy numbers become Python numbers, tuples
    lists, anything unknown its repr (a failure is never lost to an unserialisable field)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic | np.ndarray):
        return _jsonable(value.tolist())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # e.g. a Policy, as "ulp(3)"


def _tuples(value: Any) -> Any:
    # JSON has no tuples; launch sizes are tuples everywhere else in clsim.
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _encode_input(value: Any) -> tuple[dict[str, Any], np.ndarray | None]:
    """How to restore one input, and the array that stores it (None: kept as text)."""
    if isinstance(value, np.ndarray):
        kind = "array"
        arr = value
    elif isinstance(value, np.generic):
        kind = "numpy_scalar"
        arr = np.asarray(value)
    elif isinstance(value, bool | int | float | complex):
        kind = "python_" + type(value).__name__
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            # numpy would make an object array (or overflow); the digits are exact as text.
            return {"kind": "python_int_text", "text": str(value)}, None
        arr = np.asarray(value)
    else:
        return {"kind": "repr", "text": repr(value), "type": type(value).__name__}, None
    if arr.dtype.hasobject:
        return {"kind": "repr", "text": repr(value), "type": type(value).__name__}, None
    return {"kind": kind, "dtype": arr.dtype.str, "shape": list(arr.shape)}, arr


def _decode_input(info: Mapping[str, Any], arrays: Mapping[str, np.ndarray], key: str) -> Any:
    kind = info["kind"]
    if kind in ("repr", "python_int_text"):
        return int(info["text"]) if kind == "python_int_text" else info["text"]
    arr = arrays[key]
    if kind == "array":
        return arr
    if kind == "numpy_scalar":
        return arr[()]  # indexing a 0-d array with () gives the numpy scalar of its dtype
    return arr.item()  # Python bool/int/float/complex


def _digest(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    h = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
    for key in sorted(arrays):
        arr = np.ascontiguousarray(arrays[key])
        h.update(f"{key}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:10]


def save_failure(
    directory: str | os.PathLike[str] = DEFAULT_DIR,
    *,
    spec_name: str,
    inputs: Mapping[str, Any],
    launch: Mapping[str, Any],
    seed: Any = None,
    device: str = "unknown",
    policy: Any = None,
    difference: str = "",
    extra: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write one failure and return its folder. Call it before reporting the disagreement.

    ``inputs`` maps names to numpy arrays, numpy scalars or Python scalars (kernel arguments);
    ``launch`` holds ``global_size``, ``local_size``, ``subgroup_size`` and anything else needed
    to rerun; ``policy`` is a Policy, a mapping of buffer to Policy, or text (stored as text);
    ``difference`` is the human description (``Comparison.describe()``); ``extra`` lands in
    ``meta.json`` under ``"extra"`` (e.g. a Hypothesis reproduce blob, the command line);
    ``files`` maps plain file names (no folders) to text written beside them (e.g. the ``.cl``
    source as it was when the failure happened).
    """
    for fname in files or {}:
        if fname in (META, INPUTS) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", fname):
            raise ValueError(f"save_failure: bad file name {fname!r}; use a plain name like "
                             "'kernel.cl' (not meta.json or inputs.npz).")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    encoded: dict[str, Any] = {}
    for i, (name, value) in enumerate(inputs.items()):
        info, arr = _encode_input(value)
        if arr is not None:
            # npz member names are file names: index keys, so any buffer name is safe.
            info["key"] = key = f"input{i}"
            arrays[key] = arr
        encoded[str(name)] = info
    if isinstance(policy, Mapping):
        policy_text: Any = {str(k): str(v) for k, v in policy.items()}
    else:
        policy_text = None if policy is None else str(policy)
    now = datetime.now(UTC)
    meta = {
        "format": FORMAT_VERSION,
        "spec_name": spec_name,
        "device": device,
        "seed": _jsonable(seed),
        "launch": _jsonable(dict(launch)),
        "policy": policy_text,
        "difference": difference,
        "inputs": encoded,
        "created": now.isoformat(),
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "extra": _jsonable(dict(extra or {})),
    }
    digest = _digest(arrays, {k: v for k, v in meta.items() if k != "created"})
    stem = f"{_slug(spec_name)}-{_slug(device)}-{now.strftime('%Y%m%dT%H%M%SZ')}-{digest}"
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a failure is meant to be shared
    with open(tmp / INPUTS, "wb") as f:
        np.savez(f, **arrays)
        _sync(f)
    for fname, text in (files or {}).items():
        with open(tmp / fname, "w", encoding="utf-8") as f:
            f.write(text)
            _sync(f)
    with open(tmp / META, "w", encoding="utf-8") as f:
        f.write(json.dumps(meta, indent=2) + "\n")
        _sync(f)
    return _publish(tmp, root, stem)


def _sync(f: Any) -> None:
    # On disk before anything is reported: the process may be killed right after.
    f.flush()
    os.fsync(f.fileno())


def _publish(tmp: Path, root: Path, stem: str) -> Path:
    """Rename the complete temporary folder to its final name, adding -2, -3... if taken."""
    for n in range(1, 1000):
        final = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            tmp.rename(final)  # atomic on one file system; fails if ``final`` exists
            return final
        except OSError:
            if not final.exists():
                raise
    raise FileExistsError(f"{root}: too many failures named {stem}. Clear old failures.")


def load_failure(path: str | os.PathLike[str]) -> Failure:
    """Load a failure from its folder or its ``meta.json``; inputs come back bit-exact with
    their dtypes (arrays as arrays, 0-d arrays as 0-d arrays, numpy scalars as numpy scalars,
    Python scalars as Python scalars) and launch sizes as tuples."""
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    meta_path = folder / META
    if not meta_path.is_file():
        raise FileNotFoundError(f"{folder}: no {META}; not a saved failure folder.")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    arrays: dict[str, np.ndarray] = {}
    if (folder / INPUTS).is_file():
        with np.load(folder / INPUTS, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    inputs = {
        name: _decode_input(info, arrays, info.get("key", ""))
        for name, info in meta["inputs"].items()
    }
    return Failure(
        path=folder,
        spec_name=meta["spec_name"],
        device=meta["device"],
        seed=meta.get("seed"),
        launch=_tuples(meta.get("launch", {})),
        inputs=inputs,
        policy=meta.get("policy"),
        difference=meta.get("difference", ""),
        meta=meta,
    )


def list_failures(
    directory: str | os.PathLike[str] = DEFAULT_DIR,
    spec_name: str | None = None,
    device: str | None = None,
) -> list[Path]:
    """Saved failure folders under ``directory``, oldest first, optionally for one spec or
    device. A missing directory means no failures (an empty list)."""
    root = Path(directory)
    if not root.is_dir():
        return []
    found = []
    for meta_path in root.glob(f"*/{META}"):
        if meta_path.parent.name.startswith(".partial-"):
            continue
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue  # a foreign or damaged folder is not ours to list
        if spec_name is not None and meta.get("spec_name") != spec_name:
            continue
        if device is not None and meta.get("device") != device:
            continue
        found.append((meta.get("created", ""), meta_path.parent.name, meta_path.parent))
    return [p for _, _, p in sorted(found)]
