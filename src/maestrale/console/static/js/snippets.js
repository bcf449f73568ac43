// "View as code": the playground's call written for the Python SDK (mistralai) and for curl.
// The key is never written out (the page does not know it): both read MAESTRALE_API_KEY.

/** A Python literal of a JSON value (true/false/null become True/False/None). */
export function pyLiteral(value, indent = 0) {
  const pad = ' '.repeat(indent);
  const inner = ' '.repeat(indent + 4);
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'None';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (!value.length) return '[]';
    return `[\n${value.map((v) => inner + pyLiteral(v, indent + 4)).join(',\n')},\n${pad}]`;
  }
  const entries = Object.entries(value);
  if (!entries.length) return '{}';
  const body = entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pyLiteral(v, indent + 4)}`);
  return `{\n${body.join(',\n')},\n${pad}}`;
}

/** The Python SDK call of a chat or agent completion `request` (the JSON body). */
export function pythonSnippet(request, serverUrl) {
  const agent = 'agent_id' in request;
  const { stream, ...args } = request;
  const call = `client.${agent ? 'agents' : 'chat'}.${stream ? 'stream' : 'complete'}`;
  const kwargs = Object.entries(args)
    .map(([k, v]) => `    ${k}=${pyLiteral(v, 4)},`)
    .join('\n');
  const lines = [
    'import os',
    '',
    'from mistralai.client import Mistral',
    '',
    'client = Mistral(',
    '    api_key=os.environ["MAESTRALE_API_KEY"],',
    `    server_url=${JSON.stringify(serverUrl)},`,
    ')',
    '',
  ];
  if (stream) {
    lines.push(
      `with ${call}(`,
      kwargs,
      ') as events:',
      '    for event in events:',
      '        delta = event.data.choices[0].delta',
      '        if delta.content:',
      '            print(delta.content, end="", flush=True)',
      '        if delta.tool_calls:',
      '            print(delta.tool_calls)',
      'print()',
    );
  } else {
    lines.push(
      `response = ${call}(`,
      kwargs,
      ')',
      'message = response.choices[0].message',
      'print(message.content)',
      'if message.tool_calls:',
      '    print(message.tool_calls)',
    );
  }
  return lines.join('\n');
}

/** The curl command of the same call (the body in a quoted here-document: no shell quoting). */
export function curlSnippet(request, serverUrl) {
  const path = 'agent_id' in request ? '/v1/agents/completions' : '/v1/chat/completions';
  return [
    `curl${request.stream ? ' -N' : ''} ${serverUrl}${path} \\`,
    '  -H "Authorization: Bearer $MAESTRALE_API_KEY" \\',
    '  -H "Content-Type: application/json" \\',
    "  -d @- <<'JSON'",
    JSON.stringify(request, null, 2),
    'JSON',
  ].join('\n');
}
