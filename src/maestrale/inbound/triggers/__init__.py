"""Triggers: what turns a verified delivery of an inbound webhook into work (a workflow
execution or an agent conversation), and the record of what each delivery started."""
