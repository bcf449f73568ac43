"""The built-in tools the server runs for conversations and agents: document_library,
code_interpreter, web_search (and web_search_premium) and image_generation."""
