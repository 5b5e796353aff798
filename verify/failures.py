"""Save and reload the inputs of a disagreement between the simulator and a device.

Nothing is lost: the verifier calls ``save_failure`` *before* it runs or reports a case, so a
crash, a Ctrl-C or a Hypothesis shrink that moves on still leaves the failing case on disk.
A case saved before its launch is completed with ``record_outcome`` (what the launch did) or
removed with ``discard_failure`` (it agreed). Each failure is a folder
``<dir>/<spec>-<device>-<timestamp>-<hash>/`` holding

- ``inputs.npz``: every input array and numpy/Python scalar, bit-exact with its dtype
  (written without pickle; values numpy cannot store that way are kept as ``repr`` text in
  ``meta.json`` and come back as that text);
- ``meta.json``: spec name, device, seed, launch sizes, policy, the difference text, versions,
  who wrote it (host, pid, pytest-xdist worker), and how to restore each input;
- any text files the caller adds (the verifier stores the ``.cl`` source as ``kernel.cl``).

The folder is written under a ``.partial-<host>-<pid>-*`` name and published by one rename
(``verify.folders``), so a listed failure is never half written and processes or machines
sharing one directory never clobber each other's cases; partial folders of writers that died
are removed by the next save or listing. When the disk refuses a case (ENOSPC, EROFS...)
``save_failure`` prints the disagreement on stderr, the one thing this module prints, and
raises ``FailureNotSaved`` carrying it: a disagreement is never hidden by a full disk.

Files of a folder are read only from inside it (``saved_text`` refuses links leading out): a
failure folder is meant to be shared. This module does not compare, rerun or report.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from clsim.errors import SimulationError
from clsim.runtime.images import Image
from verify.folders import (
    PARTIAL,
    STALE_PARTIAL_S,
    clean_partials,
    inside,
    new_partial,
    publish,
    remove_folder,
    replace_file,
    slug,
)
from verify.folders import sync as _sync

__all__ = ["DEFAULT_DIR", "STALE_PARTIAL_S", "Failure", "FailureNotSaved", "clean_partials",
           "discard_failure", "list_failures", "load_failure", "record_outcome", "save_failure",
           "saved_text"]

FORMAT_VERSION = 1
DEFAULT_DIR = ".clsim/failures"
META = "meta.json"
INPUTS = "inputs.npz"
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_NOT_SAVED_TOLD: dict[tuple[str, ...], int] = {}


class FailureNotSaved(SimulationError):
    """A failing case could not be written (full disk, read-only folder...). ``difference``
    is the disagreement it would have recorded, ``reason`` why the disk refused it."""


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
    if isinstance(value, Image):  # its pixels, and its format as plain strings
        return {"kind": "image", "dtype": value.data.dtype.str, "shape": list(value.data.shape),
                "order": value.order, "channel_type": value.channel_type,
                "image_kind": value.kind, "access": value.access}, value.data
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
    if kind == "image":  # the format strings are checked again by Image itself
        return Image(arr, info["order"], info["channel_type"], info["image_kind"],
                     info["access"])
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


def _writer() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "worker": os.environ.get("PYTEST_XDIST_WORKER")}


def _encode_inputs(inputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    arrays: dict[str, np.ndarray] = {}
    encoded: dict[str, Any] = {}
    for i, (name, value) in enumerate(inputs.items()):
        info, arr = _encode_input(value)
        if arr is not None:
            # npz member names are file names: index keys, so any buffer name is safe.
            info["key"] = key = f"input{i}"
            arrays[key] = arr
        encoded[str(name)] = info
    return encoded, arrays


def _policy_text(policy: Any) -> Any:
    if isinstance(policy, Mapping):
        return {str(k): str(v) for k, v in policy.items()}
    return None if policy is None else str(policy)


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
    """Write one failure and return its folder. Call it before running or reporting the case.

    ``inputs`` maps names to numpy arrays, numpy scalars or Python scalars (kernel arguments);
    ``launch`` holds ``global_size``, ``local_size``, ``subgroup_size`` and anything else needed
    to rerun; ``policy`` is a Policy, a mapping of buffer to Policy, or text (stored as text);
    ``difference`` is the human description (``Comparison.describe()``; empty before the
    launch, then ``record_outcome``); ``extra`` lands in ``meta.json`` under ``"extra"`` (e.g.
    a Hypothesis reproduce blob, the command line); ``files`` maps plain file names (no
    folders) to text written beside them (e.g. the ``.cl`` source as it was).

    Raises ``FailureNotSaved`` (after printing the disagreement on stderr) when the disk
    refuses the case; nothing half written is left behind.
    """
    for fname in files or {}:
        if fname in (META, INPUTS) or not _FILE_NAME.fullmatch(fname):
            raise ValueError(f"save_failure: bad file name {fname!r}; use a plain name like "
                             "'kernel.cl' (not meta.json or inputs.npz).")
    root = Path(directory)
    encoded, arrays = _encode_inputs(inputs)
    now = datetime.now(UTC)
    meta = {
        "format": FORMAT_VERSION, "spec_name": spec_name, "device": device,
        "seed": _jsonable(seed), "launch": _jsonable(dict(launch)),
        "policy": _policy_text(policy), "difference": difference, "inputs": encoded,
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "extra": _jsonable(dict(extra or {})),
    }
    digest = _digest(arrays, meta)
    meta.update(created=now.isoformat(), writer=_writer())
    stem = f"{slug(spec_name)}-{slug(device)}-{now.strftime('%Y%m%dT%H%M%SZ')}-{digest}"
    tmp: Path | None = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        clean_partials(root)
        tmp = new_partial(root)
        _write_folder(tmp, arrays, meta, files or {})
        return publish(tmp, root, stem)
    except OSError as err:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise _not_saved(root, spec_name, device, difference, err) from err


def _write_folder(tmp: Path, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any],
                  files: Mapping[str, str]) -> None:
    with open(tmp / INPUTS, "wb") as f:
        np.savez(f, **arrays)
        _sync(f)
    for fname, text in files.items():
        with open(tmp / fname, "w", encoding="utf-8") as f:
            f.write(text)
            _sync(f)
    with open(tmp / META, "w", encoding="utf-8") as f:
        f.write(json.dumps(meta, indent=2) + "\n")
        _sync(f)


def _not_saved(root: Path, spec_name: str, device: str, difference: str,
               err: OSError) -> FailureNotSaved:
    code = errno.errorcode.get(err.errno or 0, "OSError")
    reason = f"{code}: {err.strerror or err}"
    told = difference.strip() or "(no outcome yet: the case was being saved before its launch)"
    message = (f"{root}: could not save the failing case of {spec_name} on {device} ({reason}). "
               "Free disk space or pass --failures-dir on a writable disk. The disagreement: "
               + told.replace("\n", " | "))
    _tell_not_saved((str(root), spec_name, device, reason), message)
    return FailureNotSaved(message, spec=spec_name, device=device, difference=difference,
                           reason=reason, directory=str(root))


def _tell_not_saved(key: tuple[str, ...], message: str) -> None:
    # Printed here, not only raised: Hypothesis may swallow the exception while it shrinks.
    # Once per directory, kernel, device and reason: each shrink step would repeat it.
    told = _NOT_SAVED_TOLD.get(key, 0)
    _NOT_SAVED_TOLD[key] = told + 1
    if told == 0:
        print(f"clsim: NOT SAVED: {message}", file=sys.stderr, flush=True)
    elif told == 1:
        print(f"clsim: NOT SAVED: further failing cases of {key[1]} on {key[2]} are not saved "
              f"either ({key[3]}); the last one is reported when the run ends.",
              file=sys.stderr, flush=True)


def record_outcome(folder: str | os.PathLike[str], *, difference: str = "",
                   extra: Mapping[str, Any] | None = None) -> Path:
    """Add what the launch did to a case saved before it: the difference text and ``extra``
    keys (merged into ``meta.json``'s ``"extra"``). ``meta.json`` is replaced atomically, so
    a reader sees the old or the new one, never half of it."""
    folder = Path(folder)
    meta_path = inside(folder, META)
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["difference"] = difference
    meta["extra"] = {**meta.get("extra", {}), **_jsonable(dict(extra or {}))}
    try:
        replace_file(meta_path, json.dumps(meta, indent=2) + "\n")
    except OSError as err:
        raise _not_saved(folder, meta.get("spec_name", "?"), meta.get("device", "?"),
                         difference, err) from err
    return folder


def discard_failure(folder: str | os.PathLike[str]) -> None:
    """Remove a saved case (it was saved before a launch that then agreed). It is renamed to
    a partial name first, so it disappears from listings at once even if removal stops."""
    folder = Path(folder)
    inside(folder, META)  # only ever remove a failure folder
    remove_folder(folder)


def saved_text(failure: Failure, name: str) -> str | None:
    """A text file saved with the failure (e.g. ``kernel.cl``), or None if there is none.
    Never follows a link out of the folder."""
    path = failure.path / name
    if not path.exists() and not path.is_symlink():
        return None
    return inside(failure.path, name).read_text(encoding="utf-8")


def load_failure(path: str | os.PathLike[str]) -> Failure:
    """Load a failure from its folder or its ``meta.json``; inputs come back bit-exact with
    their dtypes (arrays as arrays, 0-d arrays as 0-d arrays, numpy scalars as numpy scalars,
    Python scalars as Python scalars) and launch sizes as tuples."""
    folder = Path(path)
    if folder.is_file():
        folder = folder.parent
    if not (folder / META).exists():
        raise FileNotFoundError(f"{folder}: no {META}; not a saved failure folder.")
    try:
        meta = json.loads(inside(folder, META).read_text(encoding="utf-8"))
    except RecursionError:  # a crafted file: JSON nested thousands deep
        raise ValueError(f"{folder / META}: nested too deeply to be a saved failure") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("inputs"), dict):
        raise ValueError(f"{folder / META}: not a saved failure's meta.json (no inputs).")
    arrays: dict[str, np.ndarray] = {}
    if (folder / INPUTS).exists():
        with np.load(inside(folder, INPUTS), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    inputs = {
        name: _decode_input(info, arrays, info.get("key", ""))
        for name, info in meta["inputs"].items()
    }
    return Failure(
        path=folder,
        spec_name=str(meta["spec_name"]),
        device=str(meta["device"]),
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
    device. A missing directory means no failures (an empty list). Partial folders of dead
    writers are cleaned on the way."""
    root = Path(directory)
    if not root.is_dir():
        return []
    try:
        clean_partials(root)
    except OSError:
        pass  # a read-only listing still lists
    found = []
    for meta_path in root.glob(f"*/{META}"):
        if meta_path.parent.name.startswith(PARTIAL):
            continue
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue  # a foreign or damaged folder is not ours to list
        if not isinstance(meta, dict):
            continue
        if spec_name is not None and meta.get("spec_name") != spec_name:
            continue
        if device is not None and meta.get("device") != device:
            continue
        found.append((str(meta.get("created", "")), meta_path.parent.name, meta_path.parent))
    return [p for _, _, p in sorted(found)]
