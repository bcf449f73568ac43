"""The conversation loop: what runs between a request's inputs and the entries it adds.

- `run`: the loop itself: model turns through the gateway, server handoffs, the calls of the
  tools the server runs, until the model answers or waits for the client or the user;
- `turn_request`: the engine request of one model turn, built straight from the entries;
- `tool_calls`: the calls of the tools the server runs, recorded as `tool.execution` entries;
- `confirmations`: the tool calls that wait for the user's confirmation, and its answers.

The loop stores nothing and holds no transaction: the service reads and writes around it.
"""
