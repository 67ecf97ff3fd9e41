"""Reading and writing the files a user names on the command line, with errors that name the path.

An :class:`OSError` on such a file (missing, unreadable, a folder, a full disk, a folder that cannot be
created) is bad input, not a bug: it becomes an :class:`~fairshare.errors.InvalidInputError` naming the option
and the path, so the command exits with status 2 and one line on stderr.

* :func:`read_bytes` reads at most a given number of bytes: a regular file larger than that is refused from
  its size before anything is read, a stream (stdin, a pipe, ``/dev/zero``) after one byte too many.
* :func:`write_text` is the one way the commands write a file: atomically (a temporary file in the same folder,
  flushed to disk, then renamed over the target), so a failed write leaves the old file untouched and no
  partial file. A device or a pipe (``/dev/stdout``, a FIFO) is written in place.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from fairshare._io import read_input, too_large, write_atomically
from fairshare.errors import InvalidInputError

__all__ = ["cannot", "check_readable", "make_dir", "read_bytes", "read_stream", "read_text", "write_text"]


def cannot(field: str, path: str | Path, action: str, exc: OSError) -> InvalidInputError:
    """The error for an :class:`OSError` while doing ``action`` ("read", "write", ...) on a user's path.

    >>> str(cannot("--out", "res", "create", PermissionError(13, "Permission denied")))
    "`--out` = 'res': cannot create (Permission denied)"
    """
    return InvalidInputError(field, str(path), f"cannot {action} ({exc.strerror or exc})")


def _existing_file(field: str, path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(field, str(path), "no such file")
    if p.is_dir():
        raise InvalidInputError(field, str(path), "is a folder, not a file")
    return p


def read_stream(field: str, path: str | Path, stream: BinaryIO, limit: int) -> bytes:
    """At most ``limit`` bytes of an open binary ``stream`` named ``path`` (``-`` for stdin), or raise.

    >>> import io
    >>> read_stream("ROUND", "-", io.BytesIO(b"12345"), 4)
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `ROUND` = '-': larger than the limit of 4 bytes (3.8147e-06 MiB)
    """
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise cannot(field, path, "read", exc) from exc
    if len(data) > limit:
        raise too_large(field, path, limit)
    return data


def read_bytes(field: str, path: str | Path, limit: int) -> bytes:
    """The bytes of the file ``path`` given as ``field``, if there are at most ``limit`` of them.

    A regular file is checked by its size before it is read, so an oversized one costs no memory; a stream
    (a pipe such as ``<(command)``, a FIFO, a device such as ``/dev/zero``) is read up to one byte past the
    limit. The file is opened without waiting, so a FIFO that no program writes to reads as empty instead
    of blocking forever (start its writer first). An empty file is refused.
    """
    return read_input(field, path, limit)


def read_text(field: str, path: str | Path) -> str:
    """The text (UTF-8) of the file ``path`` given as ``field``."""
    p = _existing_file(field, path)
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(field, str(path), f"not a text file ({exc.reason})") from exc
    except OSError as exc:
        raise cannot(field, path, "read", exc) from exc


def check_readable(field: str, path: str | Path) -> None:
    """Raise unless ``path`` given as ``field`` is a file this process can open for reading."""
    _existing_file(field, path)
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise cannot(field, path, "read", exc) from exc


def write_text(field: str, path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` given as ``field``, atomically.

    The text goes to a temporary file in the target's folder, is flushed to disk, takes the old file's
    permission bits (a new file gets the usual ``0o666`` less the umask), and is renamed over the target; a
    symbolic link is followed, so the link stays and its target changes. On any failure (a full disk, a
    file-size limit, a read-only or missing folder) the temporary file is removed, the old file is left as it
    was, and :class:`~fairshare.errors.InvalidInputError` names ``field`` and ``path``. A target that exists
    and is neither a regular file nor a folder (``/dev/stdout``, ``/dev/null``, a FIFO) is written in place:
    there is nothing to replace. A process killed with ``kill -9`` in the middle may leave a hidden
    ``.NAME.*.tmp`` file next to the target; the target itself is always the old or the new text.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> write_text("--output", out, "{}")
    >>> out.read_text(), sorted(p.name for p in out.parent.iterdir())
    ('{}', ['a.json'])
    >>> write_text("--output", out.parent, "{}")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `--output` = '...': is a folder, not a file
    """
    data = text.encode("utf-8")
    target = Path(os.path.realpath(path))
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise cannot(field, path, "write", exc) from exc
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InvalidInputError(field, str(path), "is a folder, not a file")
    if info is not None and not stat.S_ISREG(info.st_mode):
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise cannot(field, path, "write", exc) from exc
        return
    try:
        write_atomically(target, data, strict_folder_sync=False)
    except OSError as exc:
        raise cannot(field, path, "write", exc) from exc


def make_dir(field: str, path: str | Path) -> Path:
    """Create the folder ``path`` given as ``field`` (and its parents) if needed."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot(field, path, "create", exc) from exc
    return p
