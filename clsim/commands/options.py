"""Argument types shared by the commands: each refuses a bad value at parse time with a message
that names the option's rule (argparse prefixes the option name), so nothing reaches the
library as a value it would misread (``--subgroup-size 0`` as "the default", ``--seed -1`` as a
numpy ValueError, ``--plot out`` as a file matplotlib silently names ``out.png``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def seed(text: str) -> int:
    """A numpy/Hypothesis seed: 0 to 2**32 - 1 (numpy refuses negative seeds)."""
    value = _int(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{value} must be from 0 to {2**32 - 1}")
    return value


def local_size(text: str) -> tuple[int, ...]:
    """A work-group size: 1 to 3 positive integers separated by commas (128, 16,16)."""
    try:
        dims = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write e.g. 128 or 16,16") from None
    if not 1 <= len(dims) <= 3 or any(v < 1 for v in dims):
        raise argparse.ArgumentTypeError(
            f"{text!r}: 1 to 3 sizes, each at least 1 (e.g. 128 or 16,16)")
    return dims


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 seconds")
    return value


def output_file(suffix: str):
    """A type for a file the command will write: it must end in ``suffix`` and its folder
    must exist and be writable, checked before any work is done."""
    def check(text: str) -> str:
        path = Path(text)
        if path.suffix.lower() != suffix:
            raise argparse.ArgumentTypeError(f"{text!r} must end in {suffix}")
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r}: folder {str(folder)!r} does not exist")
        try:  # a real write: os.access says yes to root even on read-only file systems
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as err:
            raise argparse.ArgumentTypeError(
                f"{text!r}: cannot write in {str(folder)!r} ({err.strerror})") from None
        if path.exists() and not os.access(path, os.W_OK):
            raise argparse.ArgumentTypeError(f"{text!r}: the file is not writable")
        return text
    check.__name__ = f"{suffix.lstrip('.')} file"
    return check
