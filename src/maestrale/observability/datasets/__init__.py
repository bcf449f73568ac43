"""Datasets of conversations: records, imports (durable tasks) and the JSONL export."""
