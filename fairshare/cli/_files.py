"""Reading and writing the files a user names on the command line, with errors that name the path.

An :class:`OSError` on such a file (missing, unreadable, a folder that cannot be created) is bad input, not
a bug: it becomes an :class:`~fairshare.errors.InvalidInputError` naming the option and the path, so the
command exits with status 2 and one line on stderr.
"""

from __future__ import annotations

from pathlib import Path

from fairshare.errors import InvalidInputError

__all__ = ["cannot", "check_readable", "make_dir", "read_text", "write_text"]


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
    if not p.is_file():
        raise InvalidInputError(field, str(path), "not a file")
    return p


def read_text(field: str, path: str | Path) -> str:
    """The text of the file ``path`` given as ``field``."""
    p = _existing_file(field, path)
    try:
        return p.read_text()
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
    """Write ``text`` to ``path`` given as ``field``."""
    try:
        Path(path).write_text(text)
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
