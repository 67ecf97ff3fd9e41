"""fairshare._io: size-limited reads say why they refuse; atomic writes leave the old or the new file only."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare._io import ReadRefused, fsync_folder, read_limited, write_atomically


@given(data=st.binary(max_size=64), limit=st.integers(0, 64), lock=st.booleans())
def test_what_is_written_is_read_back_within_the_limit(data: bytes, limit: int, lock: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.bin"
        write_atomically(path, data, lock=lock)
        assert os.listdir(folder) == ["f.bin"]  # no temporary left
        if len(data) <= limit:
            assert read_limited(path, limit) == data
        else:
            with pytest.raises(ReadRefused) as why:
                read_limited(path, limit)
            assert (why.value.kind, why.value.size) == ("size", len(data))


def test_refusals_name_their_kind(tmp_path: Path) -> None:
    with pytest.raises(ReadRefused) as why:
        read_limited(tmp_path / "missing", 10)
    assert why.value.kind == "open" and isinstance(why.value.error, FileNotFoundError)
    with pytest.raises(ReadRefused) as why:
        read_limited(tmp_path, 10)
    assert why.value.kind == "folder" and isinstance(why.value.error, IsADirectoryError)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_limited(empty, 10) == b""
    with pytest.raises(ReadRefused) as why:
        read_limited(empty, 10, allow_empty=False)
    assert why.value.kind == "empty" and why.value.regular


@pytest.mark.skipif(sys.platform == "win32" or not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_stream_is_read_to_one_byte_past_the_limit() -> None:
    with pytest.raises(ReadRefused) as why:
        read_limited("/dev/zero", 1000)
    assert why.value.kind == "overflow" and not why.value.regular
    with pytest.raises(ReadRefused) as why:
        read_limited("/dev/zero", 1000, regular_only=True)
    assert why.value.kind == "special"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX FIFOs")
def test_a_fifo_without_a_writer_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ReadRefused) as why:
        read_limited(fifo, 10, allow_empty=False)
    assert why.value.kind == "empty" and not why.value.regular


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_a_replaced_file_keeps_its_bits_and_a_link_stays(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomically(link, b"new", strict_folder_sync=False)
    assert link.is_symlink() and real.read_bytes() == b"new"
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"old")

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    for lock in (False, True):
        with pytest.raises(OSError, match="No space left"):
            write_atomically(path, b"new", lock=lock)
        assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.json"]


def test_a_missing_folder_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "missing" / "f.json", b"x")
    with pytest.raises(FileNotFoundError):
        fsync_folder(tmp_path / "missing")
    fsync_folder(tmp_path / "missing", strict=False)  # best effort: nothing raised


@pytest.mark.parametrize("reader", ["trace", "import", "catalog"])
def test_library_readers_stop_at_their_limit_on_an_endless_stream(monkeypatch, reader):
    """A trace, an imported source or a catalog file named /dev/zero is refused at the limit, naming the field."""
    import fairshare.sim.catalog.files as catalog_files
    import fairshare.sim.importers.base as importer_base
    import fairshare.sim.traces as traces
    from fairshare.errors import InvalidInputError

    monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 1 << 16)
    monkeypatch.setattr(importer_base, "MAX_TRACE_BYTES", 1 << 16)
    monkeypatch.setattr(catalog_files, "MAX_JSON_BYTES", 1 << 16)
    read = {"trace": lambda: traces.read_trace("/dev/zero"),
            "import": lambda: importer_base._read_bytes("/dev/zero", "trace file"),
            "catalog": lambda: catalog_files._read_file("/dev/zero")}[reader]
    with pytest.raises(InvalidInputError, match=r"/dev/zero'?: larger than the limit of 65536 bytes") as err:
        read()
    assert err.value.field in ("path", "trace file", "catalog file")


def test_read_input_words_each_refusal_for_the_user(tmp_path):
    from fairshare._io import read_input
    from fairshare.errors import InvalidInputError

    (tmp_path / "f").write_bytes(b"12345")
    assert read_input("F", tmp_path / "f", 5) == b"12345"
    (tmp_path / "empty").write_bytes(b"")
    assert read_input("F", tmp_path / "empty", 5, allow_empty=True) == b""
    cases = [(tmp_path / "nope", 5, "no such file"), (tmp_path, 5, "is a folder, not a file"),
             (tmp_path / "f", 4, "larger than the limit of 4 bytes"), (tmp_path / "empty", 5, "is empty")]
    for path, limit, words in cases:
        with pytest.raises(InvalidInputError) as err:
            read_input("F", path, limit)
        assert err.value.field == "F" and words in str(err.value)
