"""A tool this server runs, in a response, driven by the OpenAI SDK: `code_interpreter` in its
bubblewrap sandbox on the builtin engine's `/call` directive. The model reads the run's output;
the file the code wrote is an annotation of the answer, which the caller downloads."""

from __future__ import annotations

import json
from typing import Any, cast

import openai
from fastapi import FastAPI

from tests.support.app_fixtures import API_KEY, make_client
from tests.tools.code.support import requires_bwrap
from tests.tools.code.test_code_interpreter_conversation import with_code_interpreter

pytestmark = requires_bwrap

CODE = "open('squares.csv', 'w').write('n,square\\n3,9\\n')\nprint(sum(range(10)))"


async def test_code_interpreter_through_the_openai_sdk(app: FastAPI) -> None:
    with_code_interpreter(app.state.services)
    async with openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url="http://test/v1",
        # openai 3.x types its client as httpx2's and takes a legacy httpx one at run time.
        http_client=cast(Any, make_client(app)),
    ) as sdk:
        response = await sdk.responses.create(
            model="maestrale-echo",
            input=f"/call code_interpreter {json.dumps({'code': CODE})}",
            tools=cast(Any, [{"type": "code_interpreter"}]),
        )
        [message] = response.output
        assert message.type == "message"
        [part] = message.content
        assert part.type == "output_text"
        assert part.text.startswith("tool code_interpreter returned: exit status: 0")
        assert "45" in part.text
        [annotation] = part.annotations
        assert annotation.type == "file_path"
        content = await sdk.files.content(annotation.file_id)
        assert content.read() == b"n,square\n3,9\n"
