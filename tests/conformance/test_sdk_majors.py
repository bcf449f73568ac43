"""The conformance tests of every group again, with the newest mistralai 3.x first on the path.

They are written against the venv's own SDK (2.8.0); 3.x kept its module layout and moved or
dropped some operations (bench/sdk_diff.py lists them), so the same tests run under 3.x, minus
what 3.x dropped (`only_before_3`), the cross-release tests (`any_sdk`, which already speak
with every release) and the modules that do not import the SDK, except those of groups only 3.x
has (`sdk3_group`: they drive 3.x apart, and run again here for Postgres). One pytest in a
subprocess, in CI's tier, its live server on Postgres where CI has it (the first pass's is on
SQLite).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conformance.conftest import LIVE_POSTGRES
from tests.support.sdks import NEWEST_3, ROOT, sdk_dir

# The modules that import the venv's own SDK: the others (TypeScript, schema fuzz, those that
# drive each release apart through SdkProcess) would only run again as they ran.
IMPORTS_THE_SDK = re.compile(r"^\s*(from|import) mistralai\b", re.MULTILINE)
# And the modules of groups only 3.x has, so that they run on Postgres too.
THREE_ONLY_GROUP = re.compile(r"^pytestmark = pytest\.mark\.sdk3_group\b", re.MULTILINE)


@pytest.mark.ci_tier
@pytest.mark.timeout(900)
def test_the_conformance_suite_passes_with_the_newest_3x() -> None:
    where = sdk_dir(NEWEST_3)
    assert where is not None
    if not (where / "mistralai").is_dir():
        pytest.skip(f"mistralai {NEWEST_3} is not installed in {where}: run make")
    modules = sorted(
        str(path)
        for path in (ROOT / "tests" / "conformance").glob("test_*.py")
        if IMPORTS_THE_SDK.search(text := path.read_text()) or THREE_ONLY_GROUP.search(text)
    )
    # On Postgres where CI has it (the venv's own SDK's pass runs on SQLite).
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)]),
        LIVE_POSTGRES: "1",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:randomly",
            "--no-cov",
            "-o",
            "addopts=-p no:cacheprovider -p no:schemathesis",
            *modules,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
