"""The sandbox's parts that need no bubblewrap: the runtime's binds and links, the launcher's
choice of files, the server's reading of the launcher's (untrusted) report, bwrap's version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from maestrale.tools.code import launcher
from maestrale.tools.code.bwrap import parse_version
from maestrale.tools.code.python_runtime import RuntimeNotFound, _Mounts
from maestrale.tools.code.runner import SandboxLimits, _parse_report


def test_links_on_the_way_are_recreated_and_real_paths_bound(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "usr/lib/arch").mkdir(parents=True)
    (root / "usr/lib/arch/libc.so.6").write_text("")
    (root / "usr/lib64").mkdir()
    os.symlink("usr/lib", root / "lib")
    os.symlink(str(root / "lib/arch/libc.so.6"), root / "usr/lib64/loader.so")
    mounts = _Mounts()
    mounts.expose(str(root / "lib/arch"))
    mounts.expose(str(root / "usr/lib64/loader.so"))
    mounts.expose(str(root / "lib/arch/libc.so.6"))  # under a bound directory: nothing more
    args = mounts.arguments()
    binds = [args[i + 1 : i + 3] for i, a in enumerate(args) if a == "--ro-bind"]
    links = [args[i + 1 : i + 3] for i, a in enumerate(args) if a == "--symlink"]
    assert binds == [[str(root / "usr/lib/arch"), str(root / "usr/lib/arch")]]
    assert sorted(links) == sorted(
        [
            ["usr/lib", str(root / "lib")],
            [str(root / "lib/arch/libc.so.6"), str(root / "usr/lib64/loader.so")],
        ]
    )


def test_a_loop_of_links_is_refused(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(RuntimeNotFound, match="too many symbolic links"):
        _Mounts().expose(str(tmp_path / "a"))


def test_the_launcher_returns_regular_visible_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b/inner.txt").write_text("12")
    (tmp_path / "a.txt").write_text("1")
    (tmp_path / ".secret").write_text("hidden")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache/x").write_text("hidden")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__/m.pyc").write_text("")
    (tmp_path / "z.bin").write_bytes(bytes(100))
    os.symlink("/etc/passwd", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    config = {"scratch": str(tmp_path), "max_files": 2, "files_bytes": 50}
    kept, skipped = launcher.collect(config)
    assert [(f["name"], f["size"]) for f in kept] == [("a.txt", 1), ("b/inner.txt", 2)]
    assert skipped == [{"name": "z.bin", "size": 100, "reason": "count"}]


def report(**fields: object) -> bytes:
    base: dict[str, object] = {"exit_code": 0, "limits": [], "files": [], "skipped": []}
    base.update(fields)
    return json.dumps(base).encode()


def test_the_launchers_report_is_checked() -> None:
    limits = SandboxLimits(max_files=2, files_bytes=10)
    good = _parse_report(
        report(files=[{"name": "a", "size": 4}], limits=["memory", "bogus"]), limits
    )
    assert good is not None and good.files == [("a", 4)] and good.limits == ["memory"]
    for bad in (
        b"not json",
        report(exit_code="0"),
        report(exit_code=True),
        report(files=[{"name": "a", "size": -1}]),
        report(files=[{"name": "a", "size": 11}]),
        report(files=[{"name": str(n), "size": 1} for n in range(3)]),
        report(files=[{"name": 3, "size": 1}]),
        report(files="everything"),
    ):
        assert _parse_report(bad, limits) is None, bad


def test_bwrap_versions() -> None:
    assert parse_version("bubblewrap 0.8.0\n") == (0, 8, 0)
    assert parse_version("bubblewrap 0.11") == (0, 11, 0)
    assert parse_version("something else") is None
