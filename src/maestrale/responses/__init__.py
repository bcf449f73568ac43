"""The Responses API (`/v1/responses`): OpenAI's and mistralai 3.x's stateless-or-stored model
responses, run on the conversation runtime (a stored response is a turn of a conversation)."""
