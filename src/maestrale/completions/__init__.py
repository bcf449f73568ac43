"""The inference gateway: chat, FIM and embeddings, every call accounted for."""
