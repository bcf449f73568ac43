"""Campaigns: a judge run, as a durable job, over the events a search selects."""
