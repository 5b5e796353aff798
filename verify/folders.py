"""Folders that appear whole in a directory shared by many writers (the failure store).

A folder is written under a ``.partial-<host>-<pid>-*`` name (``new_partial``) and published
by one rename (``publish``), which never replaces another writer's folder: processes,
pytest-xdist workers and machines sharing one directory never clobber each other, and a
reader never sees half a folder. Partial folders whose writer died (its pid is gone on this
host) or that are older than ``STALE_PARTIAL_S`` are removed by ``clean_partials``.
``replace_file`` rewrites one file of a published folder atomically; ``remove_folder`` makes
a folder vanish from listings at once; ``inside`` refuses files that are links out.

This module knows nothing of what the folders hold (``verify.failures`` does).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

PARTIAL = ".partial-"
# A partial folder whose writer cannot be checked (another host, or a pid that may have been
# reused) is abandoned after this long; writing one case never takes minutes.
STALE_PARTIAL_S = 15 * 60


def slug(text: str, limit: int = 40) -> str:
    """``text`` as a file-name part: runs of anything but letters, digits, '_' and '.' become
    '_' (device names hold spaces, parentheses and '@'); never empty."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", str(text)).strip("_.")[:limit] or "unknown"


def host() -> str:
    """This machine's name as used in partial folder names (no '-' in it)."""
    return slug(socket.gethostname(), 30)


def sync(f: Any) -> None:
    """Flush ``f`` to the disk: the process may be killed right after it is reported."""
    f.flush()
    os.fsync(f.fileno())


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (os.umask can only
    set it, and setting it back and forth races with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_partial(root: Path) -> Path:
    """An empty partial folder under ``root``, named after this host and process, with the
    permissions the umask gives a new folder (mkdtemp makes it private, but a failure is
    meant to be shared where the umask shares)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"{PARTIAL}{host()}-{os.getpid()}-", dir=root))
    os.chmod(tmp, 0o777 & ~umask())
    return tmp


def publish(tmp: Path, root: Path, stem: str) -> Path:
    """Rename the complete folder ``tmp`` to ``root/stem``, or ``stem-2``, ``-3``... when taken."""
    for n in range(1, 1000):
        final = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            # Atomic on one file system. Onto a non-empty folder (every published one holds a
            # file) it fails, so two writers of one name never clobber each other.
            tmp.rename(final)
            return final
        except OSError:
            if not final.exists():
                raise
    raise FileExistsError(f"{root}: too many folders named {stem}. Clear old failures.")


def replace_file(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file in its folder and a rename: readers see the old
    or the new content, never half of it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            sync(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_folder(folder: Path) -> None:
    """Remove ``folder``: renamed to a partial name first, so it leaves listings at once and a
    removal cut short is finished by a later ``clean_partials``."""
    gone = folder.with_name(f"{PARTIAL}{host()}-{os.getpid()}-gone-{folder.name}")
    folder.rename(gone)
    shutil.rmtree(gone, ignore_errors=True)


def _writer_alive(name: str) -> bool | None:
    """Whether the writer of a partial folder still runs; None when it cannot be told."""
    match = re.fullmatch(re.escape(PARTIAL) + r"([^-]+)-(\d+)-.*", name)
    if match is None or match.group(1) != host():
        return None
    try:
        os.kill(int(match.group(2)), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def clean_partials(directory: str | os.PathLike[str], *, now: float | None = None) -> list[Path]:
    """Remove partial folders left by interrupted writers: their writer on this host is gone,
    or they are older than ``STALE_PARTIAL_S``. Returns what was removed."""
    root = Path(directory)
    now = time.time() if now is None else now
    removed = []
    for path in root.glob(PARTIAL + "*"):
        try:
            old = now - path.lstat().st_mtime > STALE_PARTIAL_S
        except OSError:
            continue  # removed meanwhile by another cleaner
        if path.is_symlink() or not path.is_dir():
            continue  # not ours
        if old or _writer_alive(path.name) is False:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def inside(folder: Path, name: str) -> Path:
    """``folder/name`` when it is a regular file of the folder itself, not a link out."""
    path = folder / name
    if path.is_symlink() or not path.is_file():
        what = "a link" if path.is_symlink() else "missing"
        raise FileNotFoundError(f"{path}: {what}; a saved failure's files are plain files "
                                "inside its folder.")
    return path
