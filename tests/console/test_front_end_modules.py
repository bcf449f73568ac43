"""The console's shared modules (dom.js, api.js) run in the browser: the guards of el(), the
server-sent event parser, the error messages of each of the API's error shapes."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page


async def run(page: Page, body: str) -> Any:
    """Runs `body` (which may use `dom` and `api`, the modules) in the page; its return value."""
    script = (
        "async () => { const dom = await import('/console/static/js/dom.js');"
        " const api = await import('/console/static/js/api.js');"
        f" {body} }}"
    )
    return await page.evaluate(script)


async def test_el_makes_text_of_strings_and_refuses_html_and_inline_handlers(page: Page) -> None:
    await page.goto("/console/sign-in")  # the modules need no session, only the origin
    result = await run(
        page,
        """
        const node = dom.el('p', {title: '"><b>x</b>', 'data-x': '<i>'},
            '<script>alert(1)</script>', 42, null, false, ['<b>', dom.el('em', {}, 'ok')]);
        const refused = [];
        for (const attrs of [{innerHTML: '<b>x</b>'}, {outerHTML: 'x'}, {onclick: 'alert(1)'},
                             {srcdoc: '<b>'}]) {
          try { dom.el('div', attrs); } catch (e) { refused.push(Object.keys(attrs)[0]); }
        }
        let clicked = 0;
        dom.el('button', {onclick: () => { clicked += 1; }}).click();
        const filled = dom.fill(dom.el('div', {}, 'old'), null, 'new', undefined);
        return {text: node.textContent, elements: node.querySelectorAll('*').length,
                title: node.getAttribute('title'), refused, clicked, filled: filled.innerHTML};
        """,
    )
    assert result["text"] == "<script>alert(1)</script>42<b>ok"
    assert result["elements"] == 1  # only the <em> built with el()
    assert result["title"] == '"><b>x</b>'
    assert result["refused"] == ["innerHTML", "outerHTML", "onclick", "srcdoc"]
    assert result["clicked"] == 1
    assert result["filled"] == "new"


async def test_table_and_error_box_render_text(page: Page) -> None:
    await page.goto("/console/sign-in")  # the modules need no session, only the origin
    result = await run(
        page,
        """
        const t = dom.table(['name', {label: 'Size', value: (r) => dom.bytes(r.size)}],
                            [{name: '<img src=x onerror=alert(1)>', size: 2048}]);
        const err = new api.ApiError(404, {message: '<b>no</b>', code: 'not_found'}, '<b>no</b>');
        const box = dom.errorBox(err);
        return {cells: [...t.querySelectorAll('td')].map((td) => td.textContent),
                imgs: t.querySelectorAll('img').length, box: box.textContent,
                boxElements: box.querySelectorAll('b').length};
        """,
    )
    assert result["cells"] == ["<img src=x onerror=alert(1)>", "2.0 KB"]
    assert result["imgs"] == 0
    assert result["box"] == "Error: <b>no</b> (HTTP 404, not_found)"
    assert result["boxElements"] == 0


async def test_the_sse_parser_joins_chunks_split_anywhere(page: Page) -> None:
    await page.goto("/console/sign-in")  # the modules need no session, only the origin
    events = await run(
        page,
        """
        const seen = [];
        const p = api.sseParser((e) => seen.push(e));
        const text = 'data: {"a":1}\\n\\n: comment\\nevent: message.output.delta\\r\\n'
                   + 'data: {"b":\\n\\ndata: [DONE]\\n\\ndata: tail';
        for (const ch of text) p.push(ch);
        p.end();
        return seen;
        """,
    )
    assert events == [
        {"event": None, "data": {"a": 1}},
        {"event": "message.output.delta", "data": '{"b":'},
        {"event": None, "data": "[DONE]"},
        {"event": None, "data": "tail"},
    ]


async def test_error_messages_come_from_each_error_shape_of_the_api(page: Page) -> None:
    await page.goto("/console/sign-in")  # the modules need no session, only the origin
    messages = await run(
        page,
        """
        return [
          api.messageOf(404, {object: 'error', message: 'no such file', code: 'not_found'}),
          api.messageOf(400, {detail: {message: 'bad filter', error_code: 'INVALID'}}),
          api.messageOf(422, {detail: [{loc: ['body', 'model'], msg: 'Field required'},
                                       {loc: ['query', 'page'], msg: 'too big'}]}),
          api.messageOf(404, {detail: 'Not Found'}),
          api.messageOf(502, 'Bad gateway'),
          api.messageOf(500, null),
        ];
        """,
    )
    assert messages == [
        "no such file",
        "bad filter",
        "model: Field required; query.page: too big",
        "Not Found",
        "Bad gateway",
        "HTTP 500",
    ]
