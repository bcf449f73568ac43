"""The harness of tests/docs/test_examples.py: what it finds in a page, and how an example that
fails shows, without a live server."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.docs.examples import CURL, PYTHON, Example, Runner, collect, extract, run_curl

PAGE = """\
# A page

```python
print("one")
```

<!-- docs-test: skip (needs an S3 bucket) -->
```python
import boto3
```

```sh
curl -s http://localhost:8000/v1/models \\
  -H "Authorization: Bearer $MISTRAL_API_KEY"
# and its health
curl -s http://localhost:8000/health | head -c 100
```

```sh
make run
```

```bash
pip install mistralai
curl -s http://localhost:8000/health
```

```toml
x = 1
```

!!! note
    ```python
    if True:
        print("indented")
    ```

<!-- docs-test: skip -->
```python
print("no reason")
```

<!-- docs-test: skip (a stray marker) -->
```toml
y = 2
```

````markdown
```python
print("shown inside another block, not an example")
```
````

~~~bash
curl -s http://localhost:8000/v1/models
~~~
"""


def test_extract_finds_the_blocks_it_runs_with_their_lines_and_skips(tmp_path: Path) -> None:
    found = extract(PAGE, "guides/page.md")
    assert [(e.id, e.kind, e.skip, e.problem is not None) for e in found] == [
        ("guides/page.md:3", PYTHON, None, False),
        ("guides/page.md:8", PYTHON, "needs an S3 bucket", False),
        ("guides/page.md:12", CURL, None, False),
        ("guides/page.md:33", PYTHON, None, False),
        ("guides/page.md:39", PYTHON, None, True),  # a skip needs a reason
        ("guides/page.md:43", PYTHON, None, True),  # a skip before a block that never runs
        ("guides/page.md:54", CURL, None, False),
    ]
    assert found[0].code == 'print("one")\n'
    assert found[2].code.startswith("curl -s http://localhost:8000/v1/models \\\n  -H")
    assert found[3].code == 'if True:\n    print("indented")\n'  # the fence's indent removed
    assert "reason" in (found[4].problem or "")

    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "page.md").write_text(PAGE)
    (tmp_path / "index.md").write_text("```python\nprint(1)\n```\n")
    readme = tmp_path / "README.md"
    readme.write_text("text\n\n```bash\ncurl -s http://localhost:8000/health\n```\n")
    ids = [e.id for e in collect(tmp_path / "guides", readme)]
    assert ids == [e.id.removeprefix("guides/") for e in found] + ["README.md:3"]


class Answers(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path == "/ok"
        body = b"fine" if found else b'{"detail": "nope"}'
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture
def answering() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def example(kind: str, code: str, line: int = 10) -> Example:
    return Example("guides/page.md", Path("/docs/guides/page.md"), line, kind, code)


def test_a_curl_example_fails_on_an_http_error(answering: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    ok = run_curl(example(CURL, "curl -s http://localhost:8000/ok\n"), answering, tmp_path, env, 5)
    assert (ok.status, ok.output) == (0, "fine")
    code = "curl -s http://localhost:8000/ok\ncurl -s http://localhost:8000/missing\n"
    failed = run_curl(example(CURL, code), answering, tmp_path, env, 5)
    assert failed.status == 22
    assert failed.output.startswith("fine")
    assert "error: 404" in failed.output
    assert failed.output.endswith('{"detail": "nope"}')  # the answer's body shown


def test_python_examples_run_apart_and_fail_with_their_output(tmp_path: Path) -> None:
    runner = Runner([], {**os.environ, "EXAMPLE_KEY": "given"}, preload=("json",))
    try:
        changes = (
            "import os, sys, json\n"
            "os.environ['CHANGED'] = '1'\n"
            "json.CHANGED = 1\n"
            "open('made.txt', 'w').write('x')\n"
            "print(os.environ['EXAMPLE_KEY'], sys.argv[0])\n"
        )
        first = tmp_path / "first"
        first.mkdir()
        done = runner.run(example(PYTHON, changes), "http://127.0.0.1:1", first, 5)
        assert (done.status, done.output) == (0, "given /docs/guides/page.md\n")
        assert (first / "made.txt").read_text() == "x"

        fresh = (
            "import os, json\n"
            "assert 'CHANGED' not in os.environ and not hasattr(json, 'CHANGED')\n"
            "assert os.listdir('.') == []\n"
            "print('to http://localhost:8000', flush=True)\n"
            "raise ValueError('boom')\n"
        )
        second = tmp_path / "second"
        second.mkdir()
        failed = runner.run(example(PYTHON, fresh, line=20), "http://127.0.0.1:9", second, 5)
        assert failed.status == 1
        assert failed.output.startswith("to http://127.0.0.1:9\nTraceback")
        # The traceback names the page and the line in it (the fence is line 20).
        assert 'File "/docs/guides/page.md", line 25' in failed.output
        assert failed.output.endswith("ValueError: boom\n")

        exits = runner.run(example(PYTHON, "import sys\nsys.exit(3)\n"), "", tmp_path, 5)
        assert exits.status == 3
        slow = runner.run(example(PYTHON, "import time\ntime.sleep(30)\n"), "", tmp_path, 0.2)
        assert slow.status < 0
        assert "timed out after 0.2 s" in slow.report(example(PYTHON, ""))
    finally:
        runner.close()
