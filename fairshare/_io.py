"""Reading and writing files safely: size-limited reads and atomic replacement.

* :func:`read_limited` reads at most a given number of bytes from a path, without blocking on a FIFO that
  has no writer, and says why it refused (:class:`ReadRefused`); :func:`read_input` does the same for a file a
  user named, with each refusal an :class:`~fairshare.errors.InvalidInputError` naming the field.
* :func:`write_atomically` replaces a file so that readers see the complete old or the complete new content,
  also after a crash; :func:`fsync_folder` makes a rename durable.

The other functions raise :class:`OSError` (or :class:`ReadRefused`): which field a path belongs to is the
caller's knowledge, given to :func:`read_input` and :func:`too_large` as ``field``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Literal

from fairshare.errors import InvalidInputError

if sys.platform != "win32":
    import fcntl

__all__ = ["ReadRefused", "fsync_folder", "read_input", "read_limited", "too_large", "write_atomically"]

RefusalKind = Literal["open", "read", "folder", "special", "size", "overflow", "empty"]


class ReadRefused(Exception):
    """Why :func:`read_limited` returned no bytes.

    Attributes
    ----------
    kind : str
        ``"open"`` or ``"read"`` (an :class:`OSError` while opening or reading, in ``error``); ``"folder"``
        (the path is a folder; ``error`` is the matching :class:`IsADirectoryError`); ``"special"`` (not a
        regular file, when only regular files are allowed); ``"size"`` (a regular file larger than the limit,
        its size in ``size``, nothing read); ``"overflow"`` (more bytes than the limit arrived while reading: a
        stream, or a file that grew); ``"empty"`` (nothing to read, when that is not allowed; ``regular`` says
        whether the path is a regular file).
    """

    def __init__(self, kind: RefusalKind, *, error: OSError | None = None, size: int | None = None,
                 regular: bool = True) -> None:
        super().__init__(kind)
        self.kind = kind
        self.error = error
        self.size = size
        self.regular = regular


def read_limited(path: str | os.PathLike[str], limit: int, *, regular_only: bool = False,
                 allow_empty: bool = True) -> bytes:
    """The bytes of the file at ``path``, if there are at most ``limit`` of them.

    The file is opened without waiting (``O_NONBLOCK``), so a FIFO that no program writes to cannot hang
    the caller; a regular file larger than ``limit`` is refused from its size before anything is read, so an
    oversized file costs no memory; any other file (a pipe, a FIFO with a writer, a device such as
    ``/dev/zero``) is read, blocking, up to one byte past the limit.

    Parameters
    ----------
    path
        The file to read.
    limit
        The largest number of bytes accepted.
    regular_only
        Refuse anything but a regular file (kind ``"special"``).
    allow_empty
        Return ``b""`` for an empty file; if False, refuse it (kind ``"empty"``).

    Raises
    ------
    ReadRefused
        For every reason the bytes are not returned; an :class:`OSError` is carried in its ``error``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReadRefused("open", error=exc) from None
    try:
        try:
            info = os.fstat(fd)
        except OSError as exc:
            raise ReadRefused("read", error=exc) from None
        regular = stat.S_ISREG(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            raise ReadRefused("folder", error=IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)),
                              regular=False)
        if regular_only and not regular:
            raise ReadRefused("special", regular=False)
        if regular and info.st_size > limit:
            raise ReadRefused("size", size=info.st_size)
        chunks: list[bytes] = []
        total = 0
        try:
            os.set_blocking(fd, True)  # now wait for a writer that is there (a pipe, a FIFO being written)
            while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
                total += len(chunk)
                if total > limit:
                    raise ReadRefused("overflow", regular=regular)
                chunks.append(chunk)
        except OSError as exc:
            raise ReadRefused("read", error=exc, regular=regular) from None
    finally:
        os.close(fd)
    if not total and not allow_empty:
        raise ReadRefused("empty", regular=regular)
    return b"".join(chunks)


def too_large(field: str, path: str | os.PathLike[str], limit: int, size: int | None = None) -> InvalidInputError:
    """The :class:`~fairshare.errors.InvalidInputError` for input ``path`` given as ``field`` over ``limit`` bytes."""
    known = "" if size is None else f": {size} bytes"
    return InvalidInputError(field, str(path), f"larger than the limit of {limit} bytes ({limit / 2**20:g} MiB){known}")


def read_input(field: str, path: str | os.PathLike[str], limit: int, *, allow_empty: bool = False) -> bytes:
    """The bytes of the file a user gave as ``field``, at most ``limit`` of them; every refusal as bad input.

    :func:`read_limited`, with each :class:`ReadRefused` turned into an
    :class:`~fairshare.errors.InvalidInputError` naming ``field`` and the path: "no such file", "is a folder,
    not a file", "larger than the limit of ... bytes", "is empty", "cannot read (<the system's reason>)".
    """
    try:
        return read_limited(path, limit, allow_empty=allow_empty)
    except ReadRefused as why:
        text = str(path)
        if why.kind == "open" and isinstance(why.error, FileNotFoundError):
            raise InvalidInputError(field, text, "no such file") from None
        if why.kind == "folder":
            raise InvalidInputError(field, text, "is a folder, not a file") from None
        if why.kind in ("size", "overflow"):
            raise too_large(field, path, limit, why.size if why.kind == "size" else None) from None
        if why.kind == "empty":
            raise InvalidInputError(field, text, "is empty" if why.regular else
                                    "nothing to read (a FIFO whose writer has not started?)") from None
        assert why.error is not None  # "open" or "read"
        raise InvalidInputError(field, text, f"cannot read ({why.error.strerror or why.error})") from None


def write_atomically(path: str | os.PathLike[str], data: bytes, *, lock: bool = False,
                     strict_folder_sync: bool = True) -> None:
    """Replace the file at ``path`` with ``data``, atomically and durably.

    ``data`` goes to a hidden temporary file in the same folder, which is written completely, fsynced and
    renamed over ``path``; then the folder is fsynced (:func:`fsync_folder`). Readers therefore see the
    complete old or the complete new file, also after a crash or ``kill -9`` at any moment.

    * A symbolic link at ``path`` is followed: the link stays and the file it points to is replaced.
    * An existing file keeps its permission bits (not its owner); a new one gets ``0o666`` less the umask.
    * On any failure the temporary file is removed and the file at ``path`` is unchanged.

    Parameters
    ----------
    path
        The file to replace (or create).
    data
        Its new content.
    lock
        Serialise concurrent writers of ``path`` (threads or processes): the temporary file is always
        ``.<name>.tmp`` and is held under an exclusive ``fcntl.flock`` until it is renamed; the last writer
        wins, and a ``.<name>.tmp`` left by a killed writer is reused. Without ``lock`` each call writes its
        own ``.<name>.<random>.tmp``, which a killed writer may leave behind. (No lock on Windows.)
    strict_folder_sync
        Raise an :class:`OSError` of the folder's fsync (after the rename) unless the file system cannot
        fsync a folder; if False the folder's fsync is best effort and never raises.

    Raises
    ------
    OSError
        If the folder is missing or not writable, the disk is full, a size limit is reached, ...
    """
    target = Path(os.path.realpath(os.fspath(path)))
    folder = target.parent
    if lock:
        tmp = folder / f".{target.name}.tmp"
        fd = _open_locked(tmp)
    else:
        tmp, fd = _open_fresh(folder, target.name)
    try:
        try:
            try:
                mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = None  # a new file: the umask's default, set when the temporary was created
            os.ftruncate(fd, 0)  # a leftover of a killed writer may hold anything
            if mode is not None and sys.platform != "win32":
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if sys.platform == "win32":  # Windows cannot rename an open file (and there is no lock to keep)
                os.close(fd)
                fd = -1
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        fsync_folder(folder, strict=strict_folder_sync)
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


def fsync_folder(folder: str | os.PathLike[str], *, strict: bool = True) -> None:
    """Make a rename in ``folder`` durable (POSIX; nothing on Windows).

    With ``strict``, an :class:`OSError` is raised unless it says the file system cannot fsync a folder
    (``EINVAL``, ``ENOTSUP``, ``EBADF``); without, every :class:`OSError` is ignored (best effort).
    """
    if sys.platform == "win32":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        if strict:
            raise
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if strict and exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _open_fresh(folder: Path, name: str) -> tuple[Path, int]:
    """A new temporary file ``.<name>.<random>.tmp`` in ``folder`` (created with ``0o666`` less the umask)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue


def _same_file(fd: int, path: Path) -> bool:
    """``path`` names the file open as ``fd`` (not renamed or removed meanwhile)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _open_locked(tmp: Path) -> int:
    """Open (creating if needed) the temporary file ``tmp`` and hold an exclusive lock on it.

    The lock is taken on the file, and a lock holder renames or removes ``tmp`` before releasing it, so a
    writer that waited re-checks that ``tmp`` still names the file it locked, and starts over if not. A
    ``tmp`` left by a killed writer has no lock and is reused.
    """
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        fd = os.open(tmp, flags, 0o666)  # the umask applies
        if sys.platform == "win32":
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, tmp):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
