"""Conversations (beta): stateful exchanges with a model or an agent, entry by entry.

The domain's usual modules (`router`, `schemas`, `service`, `repository`, `tables`,
`dependencies`, `executors` for batch), and the concepts of a conversation:
- `entries`: the entries (wire shapes, parsing of a request's inputs, translation into messages);
- `targets`: what answers a request (a model or an agent's version, with its tools);
- `loop/`: the conversation loop that runs a request's model turns and server tool calls;
- `server_tools`: the contract of the tools the server runs (implemented by connectors, tools);
- `turn_lease`: the lease that keeps two appends to one conversation from interleaving;
- `histories`: this process's copies of the histories it read last;
- `streaming`: a response, plain or as server-sent events.
"""
