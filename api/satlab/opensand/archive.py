"""OpenSAND configurations as archives. Unpacking an uploaded one (a zip or a tar, optionally
gzip/bzip2/xz compressed) into a directory, refusing anything that could escape or exhaust it:
absolute paths, `..`, links, devices, too many members, members or a total over the limits.
Packing a run's (the `opensand` backend's) exported configuration and its entities' probes and logs
into zips kept with the run: the configuration one unpacks (and imports) as an upload does."""

from __future__ import annotations

import io
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from satlab.opensand.xmlsafe import OpenSandError

MAX_MEMBERS = 256
MAX_MEMBER_BYTES = 8 << 20
MAX_TOTAL_BYTES = 32 << 20


def _safe_name(name: str) -> PurePosixPath:
    if any(ord(c) < 32 for c in name) or len(name) > 1024:
        raise OpenSandError(f"archive: {name[:80]!r}: not a usable file name")
    p = PurePosixPath(name.replace("\\", "/"))
    if any(len(part.encode()) > 255 for part in p.parts):
        raise OpenSandError(f"archive: {name[:80]!r}: a path component over 255 bytes")
    if p.is_absolute() or ".." in p.parts or not p.parts or ":" in p.parts[0]:
        raise OpenSandError(f"archive: {name!r}: a path outside the archive's directory")
    return p


def unpack(data: bytes, dest: Path) -> None:
    """Unpacks `data` into `dest` (an empty directory)."""
    try:
        _unpack(data, dest)
    except OSError as err:  # a member that cannot be written (a name clash with a directory, ...)
        raise OpenSandError(f"archive: cannot unpack: {err.strerror or err}") from None


def _unpack(data: bytes, dest: Path) -> None:
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        try:
            _unzip(data, dest)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as err:
            raise OpenSandError(f"archive: not a valid zip archive ({err})") from None
        return
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
            _untar(tf, dest)
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError) as err:
        raise OpenSandError(f"archive: not a valid zip or tar archive ({err})") from None


def _check_counts(n: int, total: int) -> None:
    if n > MAX_MEMBERS:
        raise OpenSandError(f"archive: more than {MAX_MEMBERS} members")
    if total > MAX_TOTAL_BYTES:
        raise OpenSandError(f"archive: more than {MAX_TOTAL_BYTES} bytes unpacked")


def _check_member_size(name: str, size: int) -> None:
    """A member that declares more than MAX_MEMBER_BYTES is refused before it is read."""
    if size > MAX_MEMBER_BYTES:
        raise OpenSandError(
            f"archive: {name!r}: {size} bytes is over the {MAX_MEMBER_BYTES}-byte limit"
        )


def _unzip(data: bytes, dest: Path) -> None:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as err:
        raise OpenSandError(f"archive: not a valid zip ({err})") from None
    with zf:
        infos = zf.infolist()
        total = 0
        for n, info in enumerate(infos, 1):
            name = _safe_name(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise OpenSandError(f"archive: {info.filename!r}: a symbolic link")
            if info.is_dir():
                _check_counts(n, total)
                continue
            _check_member_size(info.filename, info.file_size)
            total += info.file_size
            _check_counts(n, total)
            target = dest.joinpath(*name.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src:
                # Read at most the declared size + 1: a member whose header lies is caught.
                content = src.read(MAX_MEMBER_BYTES + 1)
            if len(content) > MAX_MEMBER_BYTES:
                raise OpenSandError(f"archive: {info.filename!r}: over the member limit")
            target.write_bytes(content)


def _untar(tf: tarfile.TarFile, dest: Path) -> None:
    total = 0
    n = 0
    for member in tf:
        n += 1
        name = _safe_name(member.name)
        if member.isdir():
            _check_counts(n, total)
            continue
        if not member.isfile():
            raise OpenSandError(
                f"archive: {member.name!r}: not a regular file (links and devices are refused)"
            )
        _check_member_size(member.name, member.size)
        total += member.size
        _check_counts(n, total)
        src = tf.extractfile(member)
        if src is None:
            continue
        target = dest.joinpath(*name.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read(MAX_MEMBER_BYTES + 1)[:MAX_MEMBER_BYTES])


def config_root(dest: Path) -> Path:
    """The configuration directory inside an unpacked archive: `dest`, or its only folder."""
    entries = [p for p in dest.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not (dest / "topology.xml").exists():
        return entries[0]
    return dest


def pack(root: Path, files: Iterable[Path], dest: Path) -> Path:
    """Writes `files` (under `root`) into the zip `dest`, each as DEST_STEM/its path under root:
    one folder, as an unpacked download should be (config_root finds it)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(files):
            zf.write(f, f"{dest.stem}/{f.relative_to(root).as_posix()}")
    return dest


def pack_config(config: Path, dest: Path) -> Path:
    """Every file of an exported configuration (satlab.opensand.exporter: each entity's XML, the
    trace files they name, README.txt with what was not mapped), as exported."""
    return pack(config, (p for p in config.rglob("*") if p.is_file()), dest)


def pack_probes(run: Path, entities: Iterable[str], dest: Path) -> Path:
    """What each entity of a run wrote: its local statistics and log (ENTITY/stats/, where
    satlab.opensand.probes reads them) and its standard output and error (ENTITY/opensand.log)."""
    files: list[Path] = []
    for entity in entities:
        d = run / entity
        files += [p for p in (d / "stats").glob("*") if p.is_file()]
        files += [p for p in (d / "opensand.log",) if p.is_file()]
    return pack(run, files, dest)
