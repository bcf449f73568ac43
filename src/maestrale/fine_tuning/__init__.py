"""Fine-tuning jobs (the deprecated group of the platform API): completion jobs train a LoRA of
a local chat model on the CPU, classifier jobs train heads over an embeddings model."""
