"""In-process local engines of the `[local]` extra: `llama_cpp` (chat, FIM) and `e5` (embeddings).

Each engine lives in its own module, imported only when a catalog entry names it, so that this
package imports nothing heavy by itself.
"""
